"""``python -m petsync`` runs the command line."""

from petsync.cli.main import main

if __name__ == "__main__":
    main()
