package sessions

import (
	"testing"

	"myco.dev/internal/fakemodel"
)

// TestCreateIsAnnounced (issue 22): a session's creation is an event on its own stream, and
// a child's also on its parent's, so that a client streaming a parent sees its children.
func TestCreateIsAnnounced(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "hi"})
	ctx := t.Context()
	all := f.m.Subscribe(nil, "")
	defer all.Close()
	parent, err := f.m.Create(ctx, CreateOptions{Title: "Top"})
	if err != nil {
		t.Fatal(err)
	}
	watch := f.m.Subscribe([]string{parent}, "")
	defer watch.Close()
	child, err := f.m.Create(ctx, CreateOptions{Parent: parent, Hidden: true})
	if err != nil {
		t.Fatal(err)
	}
	us, err := all.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 3 || us[0].Type != UpdateCreated || us[0].Session != parent || us[0].Title == nil || *us[0].Title != "Top" || us[0].Model == "" ||
		us[1].Type != UpdateCreated || us[1].Session != child || us[1].Parent != parent ||
		us[2].Type != UpdateChildCreated || us[2].Session != parent || us[2].Child != child {
		t.Errorf("updates of every session = %+v, want created, created (child), child_created", us)
	}
	us, err = watch.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || us[0].Type != UpdateChildCreated || us[0].Child != child {
		t.Errorf("the parent's stream = %+v, want child_created", us)
	}
	if j := f.m.RunningJob(parent); j != nil {
		t.Errorf("RunningJob of an idle session = %v, want nil", j)
	}
}
