import sys

from .refresh import main

sys.exit(main(sys.argv[1:]))
