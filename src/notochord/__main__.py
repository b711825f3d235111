"""``python -m notochord`` runs the command line."""

from notochord.cli import main

main()
