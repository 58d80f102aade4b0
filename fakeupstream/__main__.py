"""`python -m fakeupstream --port N [...]`: run the fake upstream without Django."""

from fakeupstream.cli import main

if __name__ == "__main__":
    main()
