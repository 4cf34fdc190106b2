// Package docs embeds the documentation the plugin prints itself (the cause
// catalogue, for `kubectl terminating explain`), so that the binary and the
// published docs can never say different things.
package docs

import _ "embed"

// Causes is docs/causes.md.
//
//go:embed causes.md
var Causes string
