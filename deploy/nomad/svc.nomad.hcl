# svc's control plane as a Nomad job: the API (svc serve) and the workers
# (svc worker). PostgreSQL and Temporal are external; their addresses and the
# operator token come from Nomad Variables at nomad/jobs/svc.
#   nomad var put nomad/jobs/svc DATABASE_URL=postgres://... TEMPORAL_ADDRESS=temporal:7233 SVC_INTERNAL_TOKEN=...
#   nomad job run deploy/nomad/svc.nomad.hcl
# A Temporal cluster with mutual TLS (docs/operations.md): render its client
# certificate, key and CA into the task with template blocks and set
# TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_CA to their paths.
job "svc" {
  type = "service"

  group "serve" {
    count = 2
    network {
      port "http" { to = 8080 }
    }
    task "migrate" {
      lifecycle { hook = "prestart" }
      driver = "docker"
      config {
        image = "svc:local"
        args  = ["migrate"]
      }
      template {
        data        = "{{ with nomadVar \"nomad/jobs/svc\" }}DATABASE_URL={{ .DATABASE_URL }}{{ end }}"
        destination = "secrets/env"
        env         = true
      }
    }
    task "serve" {
      driver = "docker"
      config {
        image = "svc:local"
        args  = ["serve"]
        ports = ["http"]
      }
      env {
        SVC_ADDR         = "0.0.0.0:8080"
        SVC_REQUIRE_AUTH = "1"
      }
      template {
        data        = "{{ with nomadVar \"nomad/jobs/svc\" }}{{ range .Tuples }}{{ .K }}={{ .V }}\n{{ end }}{{ end }}"
        destination = "secrets/env"
        env         = true
      }
      service {
        name = "svc"
        port = "http"
        check {
          type     = "http"
          path     = "/readyz"
          interval = "5s"
          timeout  = "2s"
        }
      }
      resources {
        cpu    = 200
        memory = 256
      }
    }
  }

  group "worker" {
    count = 2
    task "worker" {
      driver       = "docker"
      kill_timeout = "60s"
      config {
        image = "svc:local"
        args  = ["worker"]
      }
      template {
        data        = "{{ with nomadVar \"nomad/jobs/svc\" }}{{ range .Tuples }}{{ .K }}={{ .V }}\n{{ end }}{{ end }}"
        destination = "secrets/env"
        env         = true
      }
      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}
