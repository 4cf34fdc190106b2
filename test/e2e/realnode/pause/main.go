// Command pause is the real-node lab's sandbox ("pause") image: it sleeps
// until it is asked to stop. No registry is reachable here, so setup.sh
// builds it statically and packs it as registry.k8s.io/pause:3.10.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
