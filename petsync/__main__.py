"""``python -m petsync`` runs the command line."""

from petsync.cli import main

if __name__ == "__main__":
    main()
