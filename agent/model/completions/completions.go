package completions

import "net/http"

// Name is the protocol's config name, also recorded on the thinking it produces.
const Name = "openai-completions"

// Protocol is the openai-completions wire protocol. The zero value is ready to use and
// safe for concurrent use.
type Protocol struct{}

// Name returns "openai-completions".
func (Protocol) Name() string { return Name }

// Path returns "/chat/completions"; base URLs of these servers usually end in /v1.
func (Protocol) Path() string { return "/chat/completions" }

// Header sets bearer auth when key is not empty. Local servers ignore it.
func (Protocol) Header(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}
