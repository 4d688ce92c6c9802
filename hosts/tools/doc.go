// Package tools implements the host tool services: bash, str_replace_based_edit_tool and
// view_image. One implementation of each serves both the in-process local worker and the
// remote host runtime (myco --mode host). Resources are scoped by owner.
//
// It imports only the standard library and agent/model.
package tools

import "fmt"

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
