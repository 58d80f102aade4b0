#!/usr/bin/env python
"""Django's command-line entry point for Switchyard, in a checkout; installed, `switchyard`."""

from gateway.cli import main

if __name__ == "__main__":
    main()
