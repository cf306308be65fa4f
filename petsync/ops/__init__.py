"""Running petsync unattended: settings and environments, job files, logs and metrics."""
