// Command coredns is CoreDNS with only the plugins the local node's Corefile uses
// (localcluster's resolverCorefile: hosts for the names of a test's network
// namespaces, template for the rest), plus bind, with which its test serves that Corefile on
// loopback. Upstream's main compiles in every plugin, 441 of its
// 1,012 packages cloud SDKs; a Corefile naming a plugin missing here fails to
// start, and localcluster's TestCorefileUsesBuiltPlugins catches that first.
package main

import (
	"fmt"
	"os"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/template"
)

// directives is the plugin chain, in upstream plugin.cfg's order.
var directives = []string{
	"bind",
	"errors",
	"hosts",
	"template",
}

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	coremain.Run()
}
