"""The installed release of docketeer."""


def installed_version() -> str:
    """The installed release (setup.cfg's version), or "dev" in a source tree not installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version("docketeer")
    except importlib.metadata.PackageNotFoundError:
        return "dev"
