package agent

import (
	"testing"

	"myco.dev/agent/model"
)

func TestRepairHistory(t *testing.T) {
	u := func(id string) string { return "result(" + id + "?=" + unknownText + ")" }
	for _, tt := range []struct {
		name    string
		in      []model.Message
		want    string
		changed bool
	}{
		{
			name: "consistent",
			in: []model.Message{
				userText("q"),
				assistant(model.TextPart("t"), call("a"), call("b")),
				user(result("a", "A"), result("b", "B"), model.TextPart("more")),
				assistant(model.TextPart("done")),
			},
			want: "user: text(q)\nassistant: text(t) call(a) call(b)\nuser: result(a=A) result(b=B) text(more)\nassistant: text(done)\n",
		},
		{
			name: "missing result",
			in: []model.Message{
				userText("q"),
				assistant(call("a"), call("b")),
				user(result("b", "B")),
				assistant(model.TextPart("done")),
			},
			want:    "user: text(q)\nassistant: call(a) call(b)\nuser: " + u("a") + " result(b=B)\nassistant: text(done)\n",
			changed: true,
		},
		{
			name: "no user message after the calls",
			in: []model.Message{
				userText("q"),
				assistant(call("a")),
				assistant(model.TextPart("done")),
			},
			want:    "user: text(q)\nassistant: call(a)\nuser: " + u("a") + "\nassistant: text(done)\n",
			changed: true,
		},
		{
			name: "orphan result",
			in: []model.Message{
				userText("q"),
				assistant(call("a")),
				user(result("a", "A"), result("zz", "Z")),
				assistant(model.TextPart("t")),
				user(result("old", "O"), model.TextPart("next")),
			},
			want:    "user: text(q)\nassistant: call(a)\nuser: result(a=A)\nassistant: text(t)\nuser: text(next)\n",
			changed: true,
		},
		{
			name: "orphan-only user message is removed",
			in: []model.Message{
				userText("q"),
				assistant(model.TextPart("t")),
				user(result("old", "O")),
				userText("again"),
			},
			want:    "user: text(q)\nassistant: text(t)\nuser: text(again)\n",
			changed: true,
		},
		{
			name: "duplicate result",
			in: []model.Message{
				userText("q"),
				assistant(call("a")),
				user(result("a", "first"), result("a", "second")),
			},
			want:    "user: text(q)\nassistant: call(a)\nuser: result(a=first)\n",
			changed: true,
		},
		{
			name: "reordered results and text before them",
			in: []model.Message{
				userText("q"),
				assistant(call("a"), call("b")),
				user(model.TextPart("note"), result("b", "B"), result("a", "A")),
			},
			want:    "user: text(q)\nassistant: call(a) call(b)\nuser: result(a=A) result(b=B) text(note)\n",
			changed: true,
		},
		{
			name: "trailing calls",
			in: []model.Message{
				userText("q"),
				assistant(model.TextPart("t"), call("a"), call("b")),
			},
			want:    "user: text(q)\nassistant: text(t) call(a) call(b)\nuser: " + u("a") + " " + u("b") + "\n",
			changed: true,
		},
		{
			name: "duplicate call ids in one message",
			in: []model.Message{
				userText("q"),
				assistant(call("dup"), call("dup")),
				user(result("dup", "first"), result("dup", "second")),
				assistant(model.TextPart("t")),
			},
			want:    "user: text(q)\nassistant: call(dup) call(dup_2)\nuser: result(dup=first) result(dup_2=second)\nassistant: text(t)\n",
			changed: true,
		},
		{
			name: "a call id used again later",
			in: []model.Message{
				userText("q"),
				assistant(call("dup")),
				user(result("dup", "first")),
				assistant(call("dup"), call("x")),
				user(result("x", "X"), result("dup", "second")),
				assistant(call("dup")),
				user(result("dup", "third")),
			},
			want: "user: text(q)\nassistant: call(dup)\nuser: result(dup=first)\n" +
				"assistant: call(dup_2) call(x)\nuser: result(dup_2=second) result(x=X)\n" +
				"assistant: call(dup_3)\nuser: result(dup_3=third)\n",
			changed: true,
		},
		{
			name: "duplicate call ids, one result missing",
			in: []model.Message{
				userText("q"),
				assistant(call("dup"), call("dup")),
				user(result("dup", "first")),
			},
			want:    "user: text(q)\nassistant: call(dup) call(dup_2)\nuser: result(dup=first) " + u("dup_2") + "\n",
			changed: true,
		},
		{
			name: "invalid and empty call ids",
			in: []model.Message{
				userText("q"),
				assistant(call("a b"), call("")),
				user(result("a b", "A"), result("", "E")),
			},
			want:    "user: text(q)\nassistant: call(a_b) call(call)\nuser: result(a_b=A) result(call=E)\n",
			changed: true,
		},
		{
			name: "empty messages are removed",
			in: []model.Message{
				userText("q"),
				assistant(),
				user(),
				userText("r"),
			},
			want:    "user: text(q)\nuser: text(r)\n",
			changed: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := dump(tt.in)
			got, changed := RepairHistory(tt.in)
			if d := dump(got); d != tt.want || changed != tt.changed {
				t.Errorf("RepairHistory =\n%s changed %v\nwant:\n%s changed %v", d, changed, tt.want, tt.changed)
			}
			if dump(tt.in) != before {
				t.Errorf("RepairHistory modified its input")
			}
			if again, changed := RepairHistory(got); changed || dump(again) != dump(got) {
				t.Errorf("RepairHistory of its own output changed it:\n%s", dump(again))
			}
		})
	}
}
