package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// TestDecodeEvent: an event decodes into the value of its type, fields it does not know
// skipped; a type it does not know into an UnknownEvent that keeps the JSON.
func TestDecodeEvent(t *testing.T) {
	ev, err := DecodeEvent([]byte(`{"type":"state","session":"s1","seq":7,"time":"2026-01-02T03:04:05Z","busy":false,"job":"turn","job_id":"j1","later":1}`))
	st, ok := ev.(StateEvent)
	if err != nil || !ok || st.Busy || st.Job != "turn" || st.JobID != "j1" || st.Info().Seq != 7 || st.Session != "s1" || st.Time.Year() != 2026 {
		t.Errorf("DecodeEvent(state) = %#v, %v", ev, err)
	}
	data := []byte(`{"type":"novel","session":"s1","seq":8,"x":[1]}`)
	ev, err = DecodeEvent(data)
	if u, ok := ev.(UnknownEvent); err != nil || !ok || u.Type != "novel" || u.Seq != 8 || !bytes.Equal(u.Data, data) {
		t.Errorf("DecodeEvent(novel) = %#v, %v", ev, err)
	}
	for _, bad := range []string{`[]`, `{"type":"state","busy":"no"}`} {
		if ev, err := DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("DecodeEvent(%s) = %#v, want an error", bad, ev)
		}
	}
}

// TestEventTypes: every event type has its own struct, which decodes what it encodes; each
// name is one of the Event constants once.
func TestEventTypes(t *testing.T) {
	seen := map[reflect.Type]string{}
	types := EventTypes()
	for _, typ := range types {
		p, ok := NewEvent(typ)
		if !ok {
			t.Fatalf("NewEvent(%q) = false", typ)
		}
		rt := reflect.TypeOf(p).Elem()
		if other, ok := seen[rt]; ok {
			t.Errorf("types %s and %s share the struct %v", typ, other, rt)
		}
		seen[rt] = typ
		v := reflect.New(rt)
		v.Elem().FieldByName("EventInfo").FieldByName("Type").SetString(typ)
		b, _ := json.Marshal(v.Interface())
		ev, err := DecodeEvent(b)
		if err != nil || reflect.TypeOf(ev) != rt || ev.Info().Type != typ {
			t.Errorf("DecodeEvent(%s) = %#v, %v; want a %v", b, ev, err, rt)
		}
		if again, _ := json.Marshal(ev); !bytes.Equal(again, b) {
			t.Errorf("%s decoded and encoded again = %s", b, again)
		}
	}
	if _, ok := NewEvent("novel"); ok {
		t.Error(`NewEvent("novel") = true`)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(types)))) != len(types) {
		t.Errorf("EventTypes has a type twice: %v", types)
	}
}

// TestActions: each action's body names it in its action field (its only enum value), and
// NewAction makes it.
func TestActions(t *testing.T) {
	for _, name := range ActionNames() {
		a, ok := NewAction(name)
		if !ok || a.Name() != name {
			t.Fatalf("NewAction(%q) = %#v, %v", name, a, ok)
		}
		v := reflect.ValueOf(a).Elem()
		f, _ := v.Type().FieldByName("Action")
		if v.FieldByName("Action").String() != name || f.Tag.Get("enum") != name {
			t.Errorf("the body of %s has action %q and the enum %q", name, v.FieldByName("Action"), f.Tag.Get("enum"))
		}
	}
	if _, ok := NewAction("delete"); ok {
		t.Error(`NewAction("delete") = true`)
	}
}
