// Package proppath splits the property paths the component mock tests use to
// reach into registered inputs: "metadata.labels[app.kubernetes.io/name].x".
// A bracketed key is taken literally, since label keys contain dots.
package proppath

import "strings"

// Split returns the keys of path in order.
func Split(path string) []string {
	var parts []string
	for path != "" {
		switch {
		case path[0] == '.':
			path = path[1:]
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(parts, path[1:])
			}
			parts = append(parts, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			parts = append(parts, path[:end])
			path = path[end:]
		}
	}
	return parts
}
