// Command etcd is the upstream etcd server, built from the pinned module so the
// local stack needs no download of a prebuilt binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
