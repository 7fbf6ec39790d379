"""The ``horde`` console script: forwards argv to the command line defined in Rust."""

import sys


def main():
    from ._engine import cli_main

    try:
        code = cli_main(["horde", *sys.argv[1:]])
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
