"""The one exception tree of petsync.

Branches follow what the user does next. The tree below is checked against the classes
by a test, so it cannot drift::

    PetsyncError                      exit 1  something failed; the message says what
    ├── UsageError                    exit 2  fix the command line, a config or job file, input
    │   ├── ConfigError               exit 2  a setting is missing or invalid
    │   └── InputError                exit 2  a spreadsheet, journal or snapshot cannot be used
    ├── ApiError                      exit 1  the API answered with an error status
    │   ├── AuthenticationError       exit 3  the API refused the key (401)
    │   └── NotFoundError             exit 1  404 for one animal
    ├── TransportError                exit 1  the API could not be reached or answered nothing
    │   └── OutcomeUnknownError       exit 1  a POST was sent and its outcome is unknown
    ├── RetriesExhaustedError         exit 1  retrying ran out of attempts or time
    ├── ProtocolError                 exit 1  the server broke the interface
    ├── PaginationError               exit 1  paging cannot go on safely (loop, cap, origin)
    ├── LockedError                   exit 75  skipped: another run holds the directory or journal
    ├── ServerStartError              exit 1  the reference server could not start
    ├── StoppedError                  exit 143  a signal stopped the run (130 for Ctrl-C)
    └── IncompleteError               exit 4  finished and written, but the result is not whole

Each class carries its ``exit_code``; the command line catches :class:`PetsyncError` once
(``petsync.cli.main``) and exits with it: every non-zero exit leaves that way, a job whose
result is incomplete too (:class:`IncompleteError`). Messages name the thing (file, row,
field, URL, status, API code) and the fix. Foreign exceptions are translated at one
boundary with ``raise ... from exc``.
"""

from __future__ import annotations

from enum import IntEnum

from petsync.core.wording import Said, Terms, Words


class ExitCode(IntEnum):
    """The documented exit codes of every petsync command."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    AUTH = 3
    INCOMPLETE = 4
    LOCKED = 75  # EX_TEMPFAIL: skipped, another run holds the lock; cron.example's flock says 75
    INTERRUPTED = 130  # 128 + SIGINT (Ctrl-C)
    TERMINATED = 143  # 128 + SIGTERM (systemd, docker stop, Kubernetes, timeout)


# From least to most severe: a run of several jobs or files that end differently exits with
# the most severe code. A signal outranks everything (SIGTERM over Ctrl-C); then a refused key,
# bad input, a failure; a skipped run (locked) is below a failure (the failure needs looking
# into, the skip only waits for the other run to end) and above an incomplete result.
SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.OK,
    ExitCode.INCOMPLETE,
    ExitCode.LOCKED,
    ExitCode.FAILURE,
    ExitCode.USAGE,
    ExitCode.AUTH,
    ExitCode.INTERRUPTED,
    ExitCode.TERMINATED,
)


def severity(code: int) -> int:
    """Rank of an exit code among several (higher is worse); an undocumented code ranks as 1.

    >>> max([0, 4, 2], key=severity), max([4, 130, 143], key=severity), max([1, 75], key=severity)
    (2, 143, 1)
    """
    try:
        return SEVERITY.index(ExitCode(code))
    except ValueError:
        return SEVERITY.index(ExitCode.FAILURE)


class PetsyncError(Exception):
    """Root of every error petsync raises on purpose."""

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: Said) -> None:
        self.words = message if isinstance(message, Words) else Words((message,))
        self.message = str(self.words)  # in the library's terms, as str() says it
        super().__init__(self.message)
        self.reader: Terms | None = None  # whose terms it is shown in: the boundary's own

    def __str__(self) -> str:
        return self.message

    def render(self, terms: Terms) -> str:
        """The message with each setting it names in ``terms`` (:mod:`petsync.core.wording`)."""
        return self.words.render(terms)

    def shown_to(self, reader: Terms) -> None:
        """This error, to be shown in ``reader``'s terms by the boundary that shows it.

        ``petsync run`` marks the errors that leave a job file's command so: the command
        line's one error boundary then names that file's keys, not options nobody gave;
        left None, the boundary shows it in its own terms.
        """
        self.reader = reader


class UsageError(PetsyncError):
    """The command line, a config or job file, or an input file needs fixing."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """A setting is missing or invalid; the message names where it came from."""


class InputError(UsageError):
    """An input file (spreadsheet, snapshot) cannot be used; the message names file and row."""


class ApiError(PetsyncError):
    """The API answered with an error status.

    ``code``, ``api_message`` and ``api_status`` come from the interface's Error body when
    the server sent one; ``excerpt`` holds the start of any other body (a proxy's HTML page,
    an RFC 7807 document) so the user still sees what came back.
    """

    def __init__(
        self,
        message: Said,
        *,
        http_status: int,
        url: str,
        code: str | None = None,
        api_message: str | None = None,
        api_status: int | None = None,
        excerpt: str | None = None,
    ) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.url = url
        self.code = code
        self.api_message = api_message
        self.api_status = api_status
        self.excerpt = excerpt


class NotFoundError(ApiError):
    """404: the requested animal does not exist."""


class AuthenticationError(ApiError):
    """401: the API refused the key. The message names the base URL, never the key."""

    exit_code = ExitCode.AUTH


class TransportError(PetsyncError):
    """The API could not be reached, or the connection failed before an answer came."""

    def __init__(self, message: Said, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class OutcomeUnknownError(TransportError):
    """A POST reached (or may have reached) the server and no answer tells what happened.

    POST /pets is not idempotent: re-sending could create the animal twice, so petsync
    never re-sends such a request on its own. ``http_status`` is the status the server
    answered with (a 5xx after the request was sent), None when no answer came.
    """

    def __init__(self, message: Said, *, url: str, http_status: int | None = None) -> None:
        super().__init__(message, url=url)
        self.http_status = http_status


class RetriesExhaustedError(PetsyncError):
    """Retrying ran out of attempts or of its time budget; ``last_error`` is the final cause."""

    def __init__(
        self, message: Said, *, attempts: int, elapsed: float, last_error: PetsyncError
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.elapsed = elapsed
        self.last_error = last_error


class ProtocolError(PetsyncError):
    """The server answered something the interface does not allow (e.g. a float id)."""


class PaginationError(PetsyncError):
    """Paging cannot continue safely: a loop, the page cap, or a next link to another origin."""


class LockedError(PetsyncError):
    """Another petsync run holds the lock on the same output directory or journal (exit 75).

    Nothing was done: the run was skipped, as ``flock -n -E 75`` skips it in ``cron.example``,
    so a scheduler reads one code (sysexits' EX_TEMPFAIL, "try again later") for both.
    """

    exit_code = ExitCode.LOCKED


class ServerStartError(PetsyncError):
    """The reference server could not start (port taken, bad host, uvicorn failed)."""


class StoppedError(PetsyncError):
    """A signal (SIGTERM, or Ctrl-C's SIGINT) stopped the run before its end.

    The exit code is 128 + the signal's number, as a shell reports a process the signal
    killed (143, 130), so schedulers read it the same way; but the run ended on its own
    terms: an interrupted export publishes nothing, an import journals every request it
    sent and writes its outputs.
    """

    exit_code = ExitCode.TERMINATED

    def __init__(self, message: Said, *, exit_code: ExitCode = ExitCode.TERMINATED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class IncompleteError(PetsyncError):
    """The job finished and wrote its result, but the result is not whole (exit 4).

    Raised after the outputs are written (an export listing whose end was not proven, a
    suspicious drop, import rows rejected, uncertain or left pending). ``warnings`` say
    what is missing and what to do; the command line shows them as warnings, not errors.
    """

    exit_code = ExitCode.INCOMPLETE

    def __init__(self, message: Said, *, warnings: tuple[Said, ...] = ()) -> None:
        super().__init__(message)
        self.warnings = warnings
