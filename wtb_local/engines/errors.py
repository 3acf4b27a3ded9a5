"""The error a backend's setup raises: options it cannot work with, or a machine that cannot run it (a
package missing, the hub or the server unreachable). One line; `prepare` turns it into the run's error."""


class SetupError(ValueError):
    """Options a backend cannot work with; one line, naming the option."""
