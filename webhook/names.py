"""apimachinery's name and value formats (pkg/util/validation), with its exact messages.

Each `is_*` returns the list of problems with a value, empty when it is fine; callers turn each
problem into an `Invalid value` at their own path, as the API server does. One implementation
for every reader: the Pod validation port, the rules, and the HyperNode resolver, whose label
selectors LabelSelectorAsSelector judges by the same label key and value formats. A layer of
its own below the leaf modules: it imports nothing of ours.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from functools import wraps

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_ENV_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_HEADER_FMT = "[-A-Za-z0-9]+"

_LABEL = re.compile(_LABEL_FMT)
_SUBDOMAIN = re.compile(_SUBDOMAIN_FMT)
_QNAME = re.compile(_QNAME_FMT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_ENV = re.compile(_ENV_FMT)
_CONFIG_KEY = re.compile(_CONFIG_KEY_FMT)
_HEADER = re.compile(_HEADER_FMT)
_PORT_NAME_CHARS = re.compile("[-a-z0-9]+")

_QNAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"


MEMO_MAX_ENTRIES = 512  # per check: entries x MEMO_MAX_TEXT characters bounds each memo
MEMO_MAX_TEXT = 128  # longer than the names a template repeats (labels, containers, env names)


def _memo(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """Remember which texts a format check accepts: a review asks about the same label keys, env
    names and container names once per pod, and the checks are pure. Only accepted texts are
    kept, and only short ones, in a table emptied when full: a refused text is judged afresh
    (refusals are rare and carry messages), so what a client sends cannot grow a worker's memory
    by more than the bound (a table of every verdict would fill with a fuzzer's invented names)."""
    seen: set[str] = set()

    @wraps(check)
    def remembered(value: str) -> list[str]:
        if value in seen:
            return []
        problems = check(value)
        if not problems and len(value) <= MEMO_MAX_TEXT:
            if len(seen) >= MEMO_MAX_ENTRIES:
                seen.clear()
            seen.add(value)
        return problems

    _ACCEPTED[remembered] = seen
    return remembered


# Each remembering check's table of accepted texts, for `known_accepted`.
_ACCEPTED: dict[Callable[[str], list[str]], set[str]] = {}


def known_accepted(check: Callable[[str], list[str]], values: Iterable[object]) -> bool:
    """True when a remembering `check` is known to accept every one of `values`: one set
    operation instead of a call per value, for a caller that asks about many texts (a pod's
    labels). False only means not known: the caller then asks `check` value by value. Raises
    TypeError for a value that cannot be hashed (a list where a text belongs)."""
    return _ACCEPTED[check].issuperset(values)


def _match(pattern: re.Pattern[str], value: str) -> bool:
    """Go's `^...$` regexp match: `$` there is the end of the text, never before a newline."""
    return pattern.fullmatch(value) is not None


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


@_memo
def is_dns1123_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _match(_LABEL, value):
        if _match(_SUBDOMAIN, value):
            errs.append("must not contain dots")
        else:
            errs.append(
                regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                    "start and end with an alphanumeric character",
                    _LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
    return errs


@_memo
def is_dns1123_subdomain(value: str) -> list[str]:
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _match(_SUBDOMAIN, value):
        errs.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                "must start and end with an alphanumeric character",
                _SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def _mask_trailing_dash(name: str) -> str:
    """A generateName may end in '-' (a suffix follows), so check it as if that were a letter."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


@_memo
def is_qualified_name(value: str) -> list[str]:
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _match(_QNAME, name):
        errs.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_key(value: str) -> list[str]:
    """content.IsLabelKey of apimachinery v0.37.2 (pkg/api/validate/content/kube.go), the label key
    check its IsDomainPrefixedKey reads. `is_qualified_name` is the same check as 1.28 words it;
    from v0.35 a key of more than one '/' is "a valid label key ..." and lengths count bytes
    (content.MaxLenError), the prefix judged by content.IsDNS1123Subdomain (same wording)."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + (f"must be no more than {253} bytes" if m == max_len_error(253) else m) for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a valid label key "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _match(_QNAME, name):
        errs.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def cluster_trust_bundle_name(name: str) -> list[str]:
    """A ClusterTrustBundle name a projection names: extractSignerNameFromClusterTrustBundleName,
    then ValidateClusterTrustBundleName(signerName)(name, false) of kube-apiserver v1.37.2
    (pkg/apis/core/validation/names.go). A name with a ':' belongs to the signer before its last
    ':' (each ':' there read as '/') and must start with that signer's prefix; the rest, or a name
    with no ':', is a DNS subdomain."""
    split = name.rfind(":")
    if split == -1:
        return is_dns1123_subdomain(name)
    signer = name[:split].replace(":", "/")
    if not signer:  # a name starting with its only ':' is judged as one without a signer
        return ['ClusterTrustBundle without signer name must not have ":" in its name']
    required_prefix = signer.replace("/", ":") + ":"
    if not name.startswith(required_prefix):
        return [f"ClusterTrustBundle for signerName {signer} must be named with prefix {required_prefix}"]
    return is_dns1123_subdomain(name[len(required_prefix) :])


@_memo
def is_valid_label_value(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _match(_LABEL_VALUE, value):
        errs.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


@_memo
def is_env_var_name(value: str) -> list[str]:
    errs = []
    if not _match(_ENV, value):
        errs.append(
            regex_error(
                "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
                _ENV_FMT,
                "my.env-name",
                "MY_ENV.NAME",
                "MyEnvName1",
            )
        )
    return errs + _chdir_prefix(value)


_SUBDOMAIN_UNDERSCORE_LABEL = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_UNDERSCORE_FMT = _SUBDOMAIN_UNDERSCORE_LABEL + "(\\." + _SUBDOMAIN_UNDERSCORE_LABEL + ")*"
_SUBDOMAIN_UNDERSCORE = re.compile(_SUBDOMAIN_UNDERSCORE_FMT)


@_memo
def is_dns1123_subdomain_with_underscore(value: str) -> list[str]:
    """IsDNS1123SubdomainWithUnderscore (apimachinery/pkg/util/validation, v0.33.7 to v0.37.2): a
    subdomain whose labels may start with one '_' and hold '_' inside."""
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _match(_SUBDOMAIN_UNDERSCORE, value):
        errs.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and "
                "must start and end with an alphanumeric character",
                _SUBDOMAIN_UNDERSCORE_FMT,
                "example.com",
            )
        )
    return errs


_RELAXED_ENV = re.compile("[ -<>-~]*")  # printable ASCII (space to '~') but '='


@_memo
def is_relaxed_env_var_name(value: str) -> list[str]:
    """IsRelaxedEnvVarName (apimachinery/pkg/util/validation, v0.37.2): any printable ASCII but '='.
    The empty name is refused by its callers before (`Required value`), never by this message."""
    errs = ["environment variable name must be non-empty"] if not value else []
    if not _match(_RELAXED_ENV, value):
        errs.append("a valid environment variable name must consist only of printable ASCII characters other than '='")
    return errs


@_memo
def is_config_map_key(value: str) -> list[str]:
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _match(_CONFIG_KEY, value):
        errs.append(
            regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name")
        )
    return errs + _chdir_prefix(value)


def is_http_header_name(value: str) -> list[str]:
    if _match(_HEADER, value):
        return []
    return [regex_error("a valid HTTP header must consist of alphanumeric characters or '-'", _HEADER_FMT, "X-Header-Name")]


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


@_memo
def is_valid_port_name(port: str) -> list[str]:
    """An IANA service name: at most 15 characters, lowercase letters, digits and single hyphens."""
    errs = [max_len_error(15)] if len(port) > 15 else []
    if not _match(_PORT_NAME_CHARS, port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_id(value: int) -> list[str]:
    """User and group ids: 0 through MaxInt32."""
    return [] if 0 <= value <= 2147483647 else [inclusive_range_error(0, 2147483647)]


def legacy_ip_errors(value: str, *, strict: bool, message: str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)") -> list[str]:
    """IsValidIPForLegacyField (apimachinery/pkg/util/validation/ip.go, v0.33.7 to v0.37.2): what
    ParseIPSloppy takes; with `strict` (StrictIPCIDRValidation, on from 1.36) no IPv4 octet with a
    leading 0 and no IPv4-mapped IPv6 address. Non-canonical IPv6 stays allowed. `message` is the
    unparsable one (1.28 and 1.29 wrote "must be valid IP address")."""
    if not parses_as_ip(value):
        return [message]
    if not strict:
        return []
    if "." in value and ":" not in value:
        return ["must not have leading 0s"] if any(len(p) > 1 and p.startswith("0") for p in value.split(".")) else []
    tail = value.rsplit(":", 1)[-1]
    if "." in tail and any(len(p) > 1 and p.startswith("0") for p in tail.split(".")):
        return ["must not have leading 0s"]  # netip.ParseAddr refuses it; Is4In6 of the zero Addr is false
    mapped = ipaddress.IPv6Address(value).ipv4_mapped is not None
    return ["must not be an IPv4-mapped IPv6 address"] if mapped else []


def _sloppy_quad(value: str) -> bool:
    quad = value.split(".")
    return len(quad) == 4 and all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in quad)


def parses_as_ip(value: str) -> bool:
    """Go's ParseIPSloppy: IPv4 dotted quads may carry leading zeros, in an IPv6 address's
    dotted tail too (`::ffff:01.2.3.4`, which kube-apiserver 1.28.7 admits), IPv6 as usual."""
    if not value.isascii():
        return False
    if _sloppy_quad(value):
        return True
    if "%" in value:
        return False
    head, colon, tail = value.rpartition(":")
    if colon and "." in tail:
        if not _sloppy_quad(tail):
            return False
        value = head + ":" + ".".join(str(int(p)) for p in tail.split("."))
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True
