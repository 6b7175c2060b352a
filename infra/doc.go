// Package infra holds no code: its tests load the Prometheus alert rules and the Grafana
// dashboards of this folder with Prometheus's own parsers. It is a module of its own, outside
// go.work, so that the Prometheus module's many dependencies never enter the services' builds.
package infra
