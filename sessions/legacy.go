package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"myco.dev/agent/model"
)

// The older schemas are single JSON documents, rewritten whole by the binaries that wrote
// them. See docs/session-format.md for their shapes. They are read here and upgraded in
// memory; the file is rewritten as a version 5 log only by the first write.

// legacyDoc is the union of the fields of schemas 2, 3 and 4.
type legacyDoc struct {
	Version    int       `json:"version"`
	ID         string    `json:"id"`
	Created    time.Time `json:"created"`
	Model      string    `json:"model"`
	Title      string    `json:"title"`
	Links      []string  `json:"links"`
	Scratchpad string    `json:"scratchpad"`
	Parent     string    `json:"parent"`
	Hidden     bool      `json:"hidden"`

	Messages json.RawMessage `json:"messages"` // 2 and 3
	Usage    model.Usage     `json:"usage"`    // 3
	Threads  []legacyThread  `json:"threads"`  // 4
}

type legacyThread struct {
	ID          string          `json:"id"`
	Created     time.Time       `json:"created"`
	Predecessor string          `json:"predecessor"`
	Messages    []model.Message `json:"messages"`
	Usage       model.Usage     `json:"usage"`
}

// v2Message is a schema 2 message: text only, from before tool calls were stored.
type v2Message struct {
	Role    model.Role `json:"role"`
	Content string     `json:"content"`
}

// legacyNotePrefix starts the text parts schemas 3 and 4 used for hidden runtime notes;
// version 5 stores them as system parts.
const legacyNotePrefix = "[myco:"

func decodeLegacy(data []byte) (*Session, error) {
	var d legacyDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("bad session document: %w", err)
	}
	switch {
	case d.Version > Version:
		return nil, &newerSchemaError{d.Version}
	case d.Version == Version:
		return nil, fmt.Errorf("a schema version %d session must be a checksummed log, not a JSON document", Version)
	case d.Version < 2:
		return nil, fmt.Errorf("session schema version %d is not supported (this myco reads versions 2 to %d)", d.Version, Version)
	}
	s := &Session{ID: d.ID, Created: d.Created, Model: d.Model, Title: d.Title, Links: d.Links,
		Scratchpad: d.Scratchpad, Parent: d.Parent, Hidden: d.Hidden, Upgraded: d.Version}
	switch d.Version {
	case 2:
		var msgs []v2Message
		if len(d.Messages) > 0 {
			if err := json.Unmarshal(d.Messages, &msgs); err != nil {
				return nil, fmt.Errorf("schema 2 messages: %w", err)
			}
		}
		t := &Thread{ID: "t1", Created: d.Created}
		for i, m := range msgs {
			if m.Role != model.User && m.Role != model.Assistant {
				return nil, fmt.Errorf("schema 2 message %d: unknown role %q", i, m.Role)
			}
			t.Entries = append(t.Entries, Entry{Message: model.Message{Role: m.Role, Parts: []model.Part{model.TextPart(m.Content)}}})
		}
		s.Threads = []*Thread{t}
	case 3:
		var msgs []model.Message
		if len(d.Messages) > 0 {
			if err := json.Unmarshal(d.Messages, &msgs); err != nil {
				return nil, fmt.Errorf("schema 3 messages: %w", err)
			}
		}
		t := &Thread{ID: "t1", Created: d.Created, Usage: d.Usage}
		if err := addLegacyMessages(t, msgs); err != nil {
			return nil, fmt.Errorf("schema 3: %w", err)
		}
		s.Threads = []*Thread{t}
	case 4:
		if len(d.Threads) == 0 {
			return nil, errors.New("schema 4 session has no thread")
		}
		for i, lt := range d.Threads {
			t := &Thread{ID: lt.ID, Created: lt.Created, Predecessor: lt.Predecessor, Usage: lt.Usage}
			if i > 0 {
				s.Threads[i-1].Successor = t.ID
				if t.Predecessor == "" {
					t.Predecessor = s.Threads[i-1].ID
				}
				t.Reason = "compaction"
			}
			if err := addLegacyMessages(t, lt.Messages); err != nil {
				return nil, fmt.Errorf("schema 4 thread %q: %w", lt.ID, err)
			}
			s.Threads = append(s.Threads, t)
		}
	}
	return s, nil
}

// addLegacyMessages appends schema 3 and 4 messages, turning their "[myco: …]" text notes
// into hidden system parts. Acceptance times stay unknown.
func addLegacyMessages(t *Thread, msgs []model.Message) error {
	for i, m := range msgs {
		if m.Role != model.User && m.Role != model.Assistant {
			return fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		parts := make([]model.Part, 0, len(m.Parts))
		for _, p := range m.Parts {
			switch p.Kind {
			case model.KindSystem:
				return fmt.Errorf("message %d: system parts do not exist before schema %d", i, Version)
			case model.KindText:
				if m.Role == model.User && strings.HasPrefix(p.Text, legacyNotePrefix) {
					p = model.SystemPart("runtime", p.Text)
				}
			}
			parts = append(parts, p)
		}
		t.Entries = append(t.Entries, Entry{Message: model.Message{Role: m.Role, Parts: parts}})
	}
	return nil
}
