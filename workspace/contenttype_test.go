package workspace

import (
	"strings"
	"testing"
)

func TestContentType(t *testing.T) {
	const html = "<!DOCTYPE html><html><body><script>alert(1)</script></body></html>"
	for _, tt := range []struct {
		name, head, typ string
		kind            Kind
	}{
		{"notes.md", "# Title\n", TypeText, KindMarkdown},
		{"NOTES.MARKDOWN", "text", TypeText, KindMarkdown},
		{"a.md", "\x00binary", TypeDownload, KindDownload},
		{"main.go", "package main\n", TypeText, KindText},
		{"x.py", "print(1)", TypeText, KindText},
		{"page.html", html, TypeText, KindText},
		{"page.HTM", html, TypeText, KindText},
		{"index", html, TypeText, KindText}, // extensionless HTML: text, never text/html
		{"Makefile", "all:\n\tgo build\n", TypeText, KindText},
		{"blob", "\x7fELF\x02\x01\x01\x00", TypeDownload, KindDownload},
		{"icon.svg", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, TypeText, KindText},
		{"run.log", "\x1b[31mred\x1b[0m\r\n", TypeText, KindText},
		{"data.csv", "a,b\n1,2\n", TypeText, KindText},
		{"latin1.txt", "caf\xe9 au lait", TypeDownload, KindDownload},
		{"utf16.txt", "\xff\xfeh\x00i\x00", TypeDownload, KindDownload},
		{"cut.txt", "caf\xc3", TypeText, KindText}, // a character cut by the end of the head
		{"bad-end.txt", "caf\xff", TypeDownload, KindDownload},
		{"empty.txt", "", TypeText, KindText},
		{"img.png", pngHead, "image/png", KindImage},
		{"IMG.PNG", pngHead, "image/png", KindImage},
		{"photo.jpg", "\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", KindImage},
		{"photo.jpeg", "\xff\xd8\xff\xdb", "image/jpeg", KindImage},
		{"anim.gif", "GIF89a\x01\x00", "image/gif", KindImage},
		{"old.gif", "GIF87a\x01\x00", "image/gif", KindImage},
		{"pic.webp", "RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp", KindImage},
		{"mislabeled.png", "\xff\xd8\xff\xe0", "image/jpeg", KindImage}, // the bytes decide
		{"fake.png", html, TypeDownload, KindDownload},
		{"riff.webp", "RIFF\x24\x00\x00\x00WAVEfmt ", TypeDownload, KindDownload},
		{"short.webp", "RIFF", TypeDownload, KindDownload},
		{"noext-png", pngHead, TypeDownload, KindDownload},
		{"doc.pdf", "%PDF-1.7\n", TypeDownload, KindDownload}, // text bytes, unknown extension
		{"app.exe", "MZ\x90\x00", TypeDownload, KindDownload},
		{"dir.v1/file", "text", TypeText, KindText}, // the extension is the base name's
	} {
		typ, kind := ContentType(tt.name, []byte(tt.head))
		if typ != tt.typ || kind != tt.kind {
			t.Errorf("ContentType(%q, %q) = %q, %s; want %q, %s", tt.name, tt.head, typ, kind, tt.typ, tt.kind)
		}
		if strings.Contains(typ, "html") || strings.Contains(typ, "svg") || strings.Contains(typ, "javascript") {
			t.Errorf("ContentType(%q) = %q: an active type", tt.name, typ)
		}
	}
}
