package workspace

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// Kind is how the viewer shows a workspace file.
type Kind int

const (
	// KindDownload is offered as a download (Content-Disposition: attachment), never shown.
	KindDownload Kind = iota
	// KindText is shown as plain text, escaped, never rendered (HTML included).
	KindText
	// KindMarkdown is rendered by the viewer through its sanitizer; served raw it is plain text.
	KindMarkdown
	// KindImage is shown as an image; its type was checked against its first bytes.
	KindImage
)

func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindMarkdown:
		return "markdown"
	case KindImage:
		return "image"
	}
	return "download"
}

// Content types ContentType returns; no other value is ever returned.
const (
	TypeText     = "text/plain; charset=utf-8"
	TypeDownload = "application/octet-stream"
)

// sniffBytes is how much of a file's start ContentType is given by Open.
const sniffBytes = 8 << 10

// textExts are the extensions shown as text when the file's start is text.
var textExts = extSet(`txt text log csv tsv json jsonl ndjson json5 toml yaml yml
	ini cfg conf properties env xml html htm xhtml css scss sass less svg
	go mod sum py pyi rs js mjs cjs ts tsx jsx vue svelte c h cc cpp cxx hh hpp hxx m mm
	java kt kts scala groovy gradle swift rb rake gemspec php pl pm lua r jl dart zig nim
	ex exs erl hrl hs ml mli fs fsx cs vb clj cljs el lisp scm rkt sh bash zsh fish ps1 bat
	cmd sql graphql proto tf hcl nix bzl star cmake mk make diff patch rst adoc tex bib org
	txtar templ tmpl tpl jinja j2 lock awk sed tcl asm s v sv vhd d cr pas f f90 cob ipynb`)

// imageExts are the extensions shown as images when the file's magic number is one of
// the allowed images'.
var imageExts = extSet("png jpg jpeg gif webp")

func extSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, e := range strings.Fields(list) {
		set["."+e] = true
	}
	return set
}

// ContentType returns the content type and viewer kind of a workspace file from its name
// and head, its first bytes (Open passes 8 KiB). The type comes from an allow-list keyed by
// extension and is never sniffed into anything active: .md and .markdown are
// [KindMarkdown], common text and source extensions (.html included: shown as text, never
// rendered) and names without an extension are [KindText] with [TypeText], .png, .jpg,
// .jpeg, .gif and .webp are [KindImage] with the image type their magic number in head
// names, when it is one of those four; everything else, and any of the above whose head is not
// text (a NUL, a control character other than tab, newline, vertical tab, form feed,
// carriage return and escape, or bytes that are not UTF-8), is [KindDownload] with
// [TypeDownload]. SVG is text, never an image: it can carry scripts.
func ContentType(name string, head []byte) (typ string, kind Kind) {
	ext := strings.ToLower(path.Ext(path.Base(name)))
	if imageExts[ext] {
		if typ := imageType(head); typ != "" { // the bytes name the type, not the extension
			return typ, KindImage
		}
		return TypeDownload, KindDownload
	}
	if !isText(head) {
		return TypeDownload, KindDownload
	}
	switch {
	case ext == ".md" || ext == ".markdown":
		return TypeText, KindMarkdown
	case ext == "" || textExts[ext]:
		return TypeText, KindText
	}
	return TypeDownload, KindDownload
}

// imageType returns the allowed image type head starts with, or "".
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && bytes.HasPrefix(head, []byte("RIFF")) && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// isText reports whether head looks like the start of a UTF-8 text file. Its last
// character may be cut off by the end of head.
func isText(head []byte) bool {
	for _, c := range head {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r' && c != 0x1b {
			return false
		}
	}
	if utf8.Valid(head) {
		return true
	}
	for i := 1; i < utf8.UTFMax && i <= len(head); i++ {
		if tail := head[len(head)-i:]; utf8.RuneStart(tail[0]) {
			return !utf8.FullRune(tail) && utf8.Valid(head[:len(head)-i])
		}
	}
	return false
}
