def main() -> int:
    raise SystemExit("translate: not implemented yet")
