"""`python -m gateway.fakeupstream --port N [...]`: run the fake upstream without Django."""

from gateway.fakeupstream.cli import main

if __name__ == "__main__":
    main()
