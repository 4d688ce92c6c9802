package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/fakemodel"
)

// TestUpdateFieldsAreTheAPIs (issue 29): every field of an event type of package api is a
// field of Update with the same JSON name and a type that encodes alike, so that an event
// the server sends (one Update, encoded once) can be read as its api type.
func TestUpdateFieldsAreTheAPIs(t *testing.T) {
	fields := jsonFields(reflect.TypeFor[Update]())
	for _, typ := range api.EventTypes() {
		ev, _ := api.NewEvent(typ)
		for name, f := range jsonFields(reflect.TypeOf(ev).Elem()) {
			u, ok := fields[name]
			if !ok {
				t.Errorf("event %s has the field %s, which Update has not", typ, name)
				continue
			}
			if !alike(f.Type, u.Type) {
				t.Errorf("event %s: field %s is %v in package api and %v in Update", typ, name, f.Type, u.Type)
			}
		}
	}
}

// jsonFields are the fields of struct t by their JSON names, those of embedded structs
// included.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && !f.Anonymous && name != "-" && name != "" {
			out[name] = f
		}
	}
	return out
}

// alike reports whether a and b encode as the same JSON type: pointers are what they point
// to, and structs (but time.Time) have alike fields of the same names.
func alike(a, b reflect.Type) bool {
	for a.Kind() == reflect.Pointer {
		a = a.Elem()
	}
	for b.Kind() == reflect.Pointer {
		b = b.Elem()
	}
	if a.Kind() != b.Kind() {
		return false
	}
	if a.Kind() != reflect.Struct || a == b {
		return true
	}
	if a == reflect.TypeFor[time.Time]() || b == reflect.TypeFor[time.Time]() {
		return false
	}
	af, bf := jsonFields(a), jsonFields(b)
	if len(af) != len(bf) {
		return false
	}
	for name, f := range af {
		if g, ok := bf[name]; !ok || !alike(f.Type, g.Type) {
			return false
		}
	}
	return true
}

// TestUpdatesAreAPIEvents (issue 29): the updates of a session's life (its creation and a
// child's, a title, a turn with thinking, a tool call and a cut-off response, a failure, a
// rejected request, a compaction, a stop, a reset) each decode, as their JSON comes, into
// the api type of their type, with no field that type lacks, and carry every field it
// requires; encoded again, they say the same.
func TestUpdatesAreAPIEvents(t *testing.T) {
	f := newManager(t, ManagerOptions{},
		fakemodel.Turn{Thinking: "hmm", ToolCalls: []fakemodel.ToolCall{call("c1", "x")}},
		fakemodel.Turn{Text: "cut", Stop: "max_tokens"},
		fakemodel.Turn{Status: 401, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"},
		fakemodel.Turn{Status: 400, ErrorBody: anthropicInvalid},
		fakemodel.Turn{Text: "## Goal\nTest.\n## Done\nAll."},
		fakemodel.Turn{Text: strings.Repeat("slow ", 50), ChunkSize: 5, DelayMs: 50})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	all := f.m.Subscribe(nil, "")
	defer all.Close()
	id, err := f.m.Create(ctx, CreateOptions{Title: "Top"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Create(ctx, CreateOptions{Parent: id, Hidden: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.m.Act(ctx, id, "a1", ActSetTitle, "Renamed <&>"); err != nil {
		t.Fatal(err)
	}
	var seen []Update
	run := func(what string, start func() (*Job, error), stop bool) {
		t.Helper()
		j, err := start()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if stop {
			if _, err := j.Accepted(ctx); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			f.m.Cancel(id, j.ID)
		}
		j.Wait(ctx)
		seen = append(seen, collect(t, all, func(u Update) bool { return idle(u) && u.Session == id })...)
	}
	submit := func(text string) func() (*Job, error) {
		return func() (*Job, error) { return f.m.Submit(ctx, id, model.TextPart(text)) }
	}
	run("a turn", submit("go"), false)
	run("a failed turn", submit("again"), false)
	run("a rejected turn", submit("once more"), false)
	run("a compaction", func() (*Job, error) { return f.m.Compact(ctx, id) }, false)
	run("a stopped turn", submit("slowly"), true)
	reset := f.m.Subscribe(nil, "1-1")
	defer reset.Close()
	us, err := reset.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, us...)

	var got []string
	for _, u := range seen {
		b, err := u.JSON()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u.Type)
		checkAPIEvent(t, b)
	}
	for _, want := range []string{UpdateCreated, UpdateChildCreated, UpdateMeta, UpdateState, UpdateAccepted, UpdateThinkingDelta, UpdateTextDelta,
		UpdateToolStarted, UpdateToolFinished, UpdateStep, UpdateCheckpoint, UpdateDone, UpdateError, UpdateRewound,
		UpdateCancelled, UpdateCompacted, UpdateReset} {
		if !slices.Contains(got, want) {
			t.Errorf("the updates %v have no %s", got, want)
		}
	}
}

// checkAPIEvent checks one update's JSON against the api type of its type.
func checkAPIEvent(t *testing.T, b []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("an update that is not JSON: %s", b)
	}
	typ, _ := m["type"].(string)
	p, ok := api.NewEvent(typ)
	if !ok {
		t.Errorf("an update of type %q, which package api does not know: %s", typ, b)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		t.Errorf("the update %s is no api %T: %v", b, p, err)
		return
	}
	for name, f := range jsonFields(reflect.TypeOf(p).Elem()) {
		if _, ok := m[name]; !ok && !strings.Contains(f.Tag.Get("json"), ",omit") {
			t.Errorf("the update %s lacks the field %s, which api's %T requires", b, name, p)
		}
	}
	var again map[string]any
	b2, _ := json.Marshal(p)
	json.Unmarshal(b2, &again)
	if !reflect.DeepEqual(m, again) {
		t.Errorf("the update %s, read as api's %T and encoded again, says %s", b, p, b2)
	}
}
