package api

// Version is the version of the JSON API under /api/. It is in every answer's
// [VersionHeader] header, in GET /api/version and in the OpenAPI document. An additive
// change (a new endpoint, field, event type, enum value or error code) keeps it: a client
// skips what it does not know, and can tell whether a server has a field by the 400
// unknown_field an older one answers. A breaking change comes under a new path (/api/v2/),
// with a new version, and /api/ stays as it is.
const Version = "1"

// VersionHeader is the header that carries [Version] on every answer of the API.
const VersionHeader = "Myco-API-Version"
