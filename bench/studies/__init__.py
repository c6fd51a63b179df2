"""Studies: seed 002's tables, margins, harness overhead, batch scaling, native speed, the GPU check."""
