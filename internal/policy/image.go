package policy

import "strings"

// imageRef splits an image reference into its repository, tag and digest.
func imageRef(image string) (repo, tag, digest string) {
	repo = image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo, digest = repo[:i], repo[i+1:]
	}
	slash := strings.LastIndex(repo, "/")
	if i := strings.LastIndex(repo, ":"); i > slash {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}
