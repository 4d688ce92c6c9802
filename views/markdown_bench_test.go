package views

import (
	"strings"
	"testing"
)

// benchMessage is a typical assistant answer of about 2 KB: prose with inline code, a
// list, a link to a workspace file, a link out, and a 16-line Go block.
const benchMessage = "The failing test is `TestLoadProfile`: `config.Load` reads `MYCO_HOME` before it looks at the `--profile` flag, so a profile named on the command line is ignored whenever the variable is set. I changed the order and added a test for each combination.\n\n" +
	"## What changed\n\n" +
	"1. `config.Load` takes the profile name as an argument instead of reading the flag itself.\n" +
	"2. `cmd/myco` passes the flag's value, which now wins over the environment.\n" +
	"3. The error for a missing profile names the directory it looked in, e.g. `/home/u/.myco/profiles/work`.\n\n" +
	"```go\n" +
	"// Load reads the profile's config.toml below home.\n" +
	"func Load(home, profile string) (*Config, error) {\n" +
	"\tif profile == \"\" {\n" +
	"\t\tprofile = \"default\"\n" +
	"\t}\n" +
	"\tdir := filepath.Join(home, \"profiles\", profile)\n" +
	"\tf, err := os.Open(filepath.Join(dir, \"config.toml\"))\n" +
	"\tif errors.Is(err, fs.ErrNotExist) {\n" +
	"\t\treturn nil, fmt.Errorf(\"profile %q: no %s: create it with myco init\", profile, dir)\n" +
	"\t}\n" +
	"\tif err != nil {\n" +
	"\t\treturn nil, fmt.Errorf(\"load profile %q: %w\", profile, err)\n" +
	"\t}\n" +
	"\tdefer f.Close()\n" +
	"\treturn decode(f)\n" +
	"}\n" +
	"```\n\n" +
	"The notes are in [the plan](notes/plan.md); the flag precedence follows the [Go command's documentation](https://go.dev/doc/). " +
	"All tests pass (`go test ./config/... ./cmd/...`), and **nothing else** changed.\n\n" +
	"- [x] reorder the lookup\n- [x] add tests\n- [ ] update the docs\n"

// BenchmarkMarkdown measures one message. A transcript page renders every message it shows,
// so the per-message cost times the number of messages is the page's Markdown cost.
func BenchmarkMarkdown(b *testing.B) {
	prose := strings.Repeat("Some prose with `inline code`, *emphasis* and a [link](https://go.dev/). ", 27)
	for _, bm := range []struct{ name, src string }{
		{"typical-2KB", benchMessage},
		{"prose-2KB", prose},
		{"short", "Done: the tests pass."},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(bm.src)))
			b.ReportAllocs()
			for b.Loop() {
				_ = Markdown(bm.src, mdOptions)
			}
		})
	}
}
