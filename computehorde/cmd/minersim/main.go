// Command minersim serves a fleet of simulated ComputeHorde miners on loopback addresses, with
// a metagraph stub and arrival records on its control address. Run it with -help for every
// flag and scripted behaviour.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"drover.dev/computehorde/minersim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "minersim:", err)
		os.Exit(1)
	}
}

// run starts the fleet and serves until ctx ends (SIGINT or SIGTERM), then closes every
// connection and listener.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	limit, err := raiseFileLimit()
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	fleet, err := minersim.Start(ctx, cfg.Config)
	if err != nil {
		return err
	}
	stopPylon, err := servePylon(ctx, fleet, cfg.pylonAddr, cfg.pylonToken, stdout)
	if err != nil {
		return errors.Join(err, fleet.Close())
	}
	miners := fleet.Miners()
	first, last := miners[0], miners[len(miners)-1]
	fmt.Fprintf(stdout, "minersim: control %s\n", fleet.ControlURL())
	fmt.Fprintf(stdout, "minersim: %d miners (%s:%d … %s:%d), %d executors (%s), %d validators known, spin-up %s, open-file limit %d\n",
		len(miners), first.IP, first.Port, last.IP, last.Port, fleet.Executors(), cfg.classes,
		len(fleet.Metagraph().Miners)-len(miners), cfg.SpinUp, limit)
	<-ctx.Done()
	fmt.Fprintln(stdout, "minersim: stopping")
	return errors.Join(stopPylon(), fleet.Close())
}
