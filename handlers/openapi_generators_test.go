package handlers

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/needs"
	"myco.dev/sessions"
)

// The document as client generators read it (issue 29).

// TestOpenAPIForGenerators (issue 29): what client generators read: the action body is the
// named union Action, one member per action, told by its action field; the actions' answer
// the named union ActionResult; every event stream's data the named union Event, one member
// per event type of package api, each member's type one value; every operation declares
// 405 and the token scheme applies to all.
func TestOpenAPIForGenerators(t *testing.T) {
	var doc struct {
		Security   []map[string][]string                            `json:"security"`
		Paths      map[string]map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas         map[string]json.RawMessage `json:"schemas"`
			SecuritySchemes map[string]struct {
				Type, Scheme string
			} `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(apiDocument(t), &doc); err != nil {
		t.Fatal(err)
	}
	type union struct {
		OneOf []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
		Discriminator struct {
			PropertyName string            `json:"propertyName"`
			Mapping      map[string]string `json:"mapping"`
		} `json:"discriminator"`
	}
	member := func(u union, name, value string) {
		t.Helper()
		ref := u.Discriminator.Mapping[value]
		if !slices.ContainsFunc(u.OneOf, func(o struct {
			Ref string `json:"$ref"`
		}) bool {
			return o.Ref == ref
		}) {
			t.Errorf("%s: %s %q maps to %q, which is not one of its members", name, u.Discriminator.PropertyName, value, ref)
			return
		}
		var s struct {
			Properties map[string]struct{ Enum []string } `json:"properties"`
			Required   []string                           `json:"required"`
		}
		json.Unmarshal(doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")], &s)
		if p := u.Discriminator.PropertyName; !slices.Contains(s.Properties[p].Enum, value) || !slices.Contains(s.Required, p) {
			t.Errorf("%s: the member %s does not require %s %q", name, ref, p, value)
		}
	}
	unionOf := func(name, by string, values []string) {
		t.Helper()
		var u union
		json.Unmarshal(doc.Components.Schemas[name], &u)
		if u.Discriminator.PropertyName != by || len(u.Discriminator.Mapping) != len(values) {
			t.Errorf("schema %s: discriminator %s with %d values, want %s with %d", name, u.Discriminator.PropertyName, len(u.Discriminator.Mapping), by, len(values))
		}
		for _, v := range values {
			member(u, name, v)
		}
	}
	unionOf("Action", "action", api.ActionNames())
	unionOf("ActionResult", "action", api.ActionNames())
	unionOf("Event", "type", api.EventTypes())
	var ev union
	json.Unmarshal(doc.Components.Schemas["Event"], &ev)
	if len(ev.OneOf) != len(api.EventTypes()) {
		t.Errorf("Event has %d members, package api %d event types: one type each", len(ev.OneOf), len(api.EventTypes()))
	}

	ref := func(raw json.RawMessage, path ...string) string {
		var v any
		json.Unmarshal(raw, &v)
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		s, _ := v.(string)
		return s
	}
	streams := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if ref(op["responses"], "405", "$ref") != "#/components/responses/MethodNotAllowed" {
				t.Errorf("%s %s declares no 405", method, path)
			}
			if ref(op["requestBody"], "content", "application/json", "schema", "$ref") == "" && op["requestBody"] != nil {
				t.Errorf("%s %s: its body is not a named schema", method, path)
			}
			if r := ref(op["responses"], "200", "content", "text/event-stream", "schema", "$ref"); r != "" {
				streams++
				if r != "#/components/schemas/Event" {
					t.Errorf("%s %s streams %s, want Event", method, path, r)
				}
			}
		}
	}
	if streams != 1 {
		t.Errorf("%d operations stream Event, want 1 (GET /events)", streams)
	}
	if got := ref(doc.Paths["/sessions/{id}/actions"]["post"]["requestBody"], "content", "application/json", "schema", "$ref"); got != "#/components/schemas/Action" {
		t.Errorf("the actions' body is %q, want the union Action", got)
	}
	if s := doc.Components.SecuritySchemes["token"]; s.Type != "http" || s.Scheme != "bearer" ||
		!slices.ContainsFunc(doc.Security, func(r map[string][]string) bool { _, ok := r["token"]; return ok }) {
		t.Errorf("the token scheme is %+v, the document's security %v: want bearer, applied", s, doc.Security)
	}
}

// TestOpenAPIJSONNames (issue 29): the document's descriptions name fields as the wire does
// (call_id, duration_secs, child_session), never by their Go names (CallID, DurationSecs,
// ChildSession): no Go name of a described field of more than one word is left in them.
func TestOpenAPIJSONNames(t *testing.T) {
	b, goNames := generate(t)
	var doc any
	json.Unmarshal(b, &doc)
	schemas := doc.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
	var descs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "description" || k == "summary") {
					descs = append(descs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	words := regexp.MustCompile(`^[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*$`) // CallID, DurationSecs, not ID or Text
	checked := 0
	for goName, name := range goNames {
		if _, schema := schemas[goName]; schema || goName == name || !words.MatchString(goName) {
			continue
		}
		checked++
		w := regexp.MustCompile(`\b` + goName + `\b`)
		for _, d := range descs {
			if w.MatchString(d) {
				t.Errorf("a description names %s, whose JSON name is %s: %.200s", goName, name, d)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d Go names checked; the generator reports %d fields", checked, len(goNames))
	}
}

// TestEventEnumsAreTheServices: the values the document gives an event's stop and job are
// those of agent/model's stop reasons and the session service's jobs.
func TestEventEnumsAreTheServices(t *testing.T) {
	stops := []string{string(model.StopEnd), string(model.StopToolUse), string(model.StopMaxTokens), string(model.StopRefusal),
		string(model.StopPause), string(model.StopContext), string(model.StopOther)}
	jobs := []string{sessions.JobTurn, sessions.JobCompact}
	for _, tt := range []struct {
		t     reflect.Type
		field string
		want  []string
	}{
		{reflect.TypeFor[api.StepEvent](), "Stop", stops},
		{reflect.TypeFor[api.DoneEvent](), "Stop", stops},
		{reflect.TypeFor[api.DoneEvent](), "Job", jobs},
		{reflect.TypeFor[api.ErrorEvent](), "Job", jobs},
		{reflect.TypeFor[api.CancelledEvent](), "Job", jobs},
		{reflect.TypeFor[api.StateEvent](), "Job", jobs},
		{reflect.TypeFor[api.SnapshotAnswer](), "Job", jobs},
	} {
		f, _ := tt.t.FieldByName(tt.field)
		if got := strings.Split(f.Tag.Get("enum"), ","); !slices.Equal(got, tt.want) {
			t.Errorf("%v.%s takes %v, want %v", tt.t, tt.field, got, tt.want)
		}
	}
}

// lintScript lints the OpenAPI document named by its argument with Redocly's recommended
// rules (@redocly/openapi-core, pinned in package.json) and prints each problem on a line:
// its severity, its rule and where.
const lintScript = `
const { lint, createConfig } = await import(process.env.REDOCLY_CORE);
const config = await createConfig({ extends: ["recommended"] });
for (const p of await lint({ ref: process.argv[1], config })) {
  console.log(p.severity, p.ruleId, p.location?.[0]?.pointer ?? "", p.message);
}`

// TestOpenAPIRecommendedLint (issue 29): the document passes Redocly's recommended rules
// with no error (it had ten: no operation declared its security). The warnings left are
// known: no license in info, and the NotFound answer, which is the answer of a path that is
// no operation and so belongs to none.
func TestOpenAPIRecommendedLint(t *testing.T) {
	core, _ := filepath.Abs("../node_modules/@redocly/openapi-core/lib/index.js")
	if _, err := os.Stat(core); err != nil {
		needs.Missing(t, "@redocly/openapi-core is not installed (npm ci installs it from package.json)")
	}
	node := needs.Program(t, "node", "apt-get install nodejs")
	f := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(f, apiDocument(t), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--input-type=module", "-e", lintScript, f)
	cmd.Env = append(os.Environ(), "REDOCLY_CORE="+core)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the linter: %v\n%s", err, out)
	}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		switch {
		case len(fields) < 3:
			t.Errorf("a line the linter printed: %q", line)
		case fields[0] == "error":
			t.Errorf("the document breaks a recommended rule: %s", line)
		case fields[1] != "info-license" && !(fields[1] == "no-unused-components" && fields[2] == "#/components/responses/NotFound"):
			t.Errorf("a warning not known: %s", line)
		}
	}
}
