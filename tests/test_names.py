"""apimachinery's name formats and their exact messages."""

from webhook import names

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def test_dns1123_label_message_keeps_upstream_spacing():
    assert names.is_dns1123_label("Main") == [LABEL_MSG]
    assert names.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert names.is_dns1123_label("bad.sub") == ["must not contain dots"]
    assert names.is_dns1123_label("ok-1") == []


def test_dns1123_label_rejects_a_trailing_newline_as_go_does():
    assert names.is_dns1123_label("main\n") == [LABEL_MSG]


def test_qualified_name_prefix_and_name_parts():
    assert names.is_qualified_name("example.com/app") == []
    assert names.is_qualified_name("/app") == ["prefix part must be non-empty"]
    assert names.is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert names.is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of")
    assert names.is_qualified_name("Example.com/app")[0].startswith("prefix part a lowercase RFC 1123 subdomain")


def test_generate_name_may_end_in_a_dash():
    assert names.name_is_dns_subdomain("web-", prefix=True) == []
    assert names.name_is_dns_subdomain("web-") != []


def test_port_names_follow_iana_service_names():
    assert names.is_valid_port_name("http") == []
    assert names.is_valid_port_name("8080") == ["must contain at least one letter (a-z)"]
    assert names.is_valid_port_name("my--port") == ["must not contain consecutive hyphens"]
    assert names.is_valid_port_name("abcdefghijklmnop") == ["must be no more than 15 characters"]
    assert names.is_valid_port_name("HTTP") == [
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        "must contain at least one letter (a-z)",
    ]


def test_env_names_and_config_keys():
    assert names.is_env_var_name("my.var-1") == []
    assert names.is_env_var_name("..")[-1] == "must not be '..'"
    assert names.is_config_map_key("bad/key")[0].startswith("a valid config key must consist of")


def test_ip_parsing_is_sloppy_about_leading_zeros():
    assert names.parses_as_ip("010.0.0.1")
    assert names.parses_as_ip("2001:db8::1")
    assert not names.parses_as_ip("dns.example.com")


def test_the_format_checks_remember_only_short_texts_and_a_bounded_number():
    """The checks remember their verdicts per text (a review asks about the same names many
    times), but what a client sends must not grow the table: long texts are judged afresh and
    never kept, and the table is emptied when it is full."""
    import inspect

    from webhook import names

    seen = inspect.getclosurevars(names.is_dns1123_label).nonlocals["seen"]
    seen.clear()
    for i in range(50):
        long_text = f"x{i}" + "a" * 5000
        assert names.is_dns1123_label(long_text) == names.is_dns1123_label(long_text)
    assert not any(len(k) > names.MEMO_MAX_TEXT for k in seen)
    for i in range(names.MEMO_MAX_ENTRIES + 10):
        names.is_dns1123_label(f"n{i}")
    assert len(seen) <= names.MEMO_MAX_ENTRIES
    assert names.is_dns1123_label("Bad_Name") and names.is_dns1123_label("Bad_Name") is not names.is_dns1123_label("Bad_Name")
    assert "Bad_Name" not in seen  # refused texts are judged afresh, never kept


def test_names_a_client_invents_cannot_grow_the_format_checks_memory():
    """Every check fed 12,000 invented texts (up to 256 characters, mostly refused; a short prefix of
    each; and 4,000 distinct short ones every check accepts and so would remember): what the tables
    hold stays within their bound (seven checks x 512 texts of at most 128 characters). Without the
    bound they would hold several MiB."""
    import random
    import tracemalloc

    from webhook import names

    checks = [
        names.is_dns1123_label,
        names.is_dns1123_subdomain,
        names.is_qualified_name,
        names.is_valid_label_value,
        names.is_env_var_name,
        names.is_config_map_key,
        names.is_valid_port_name,
    ]
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-._/ABC"
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(4_000):
            text = "".join(rng.choices(alphabet, k=rng.randint(1, 256)))  # one call, not one per character
            short = text[: rng.randint(1, 40)].lower().strip("-._/") or "a"
            plain = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=rng.randint(8, 15)))
            for check in checks:
                check(text)
                check(short)
                check(plain)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1.5 * 2**20, held


def test_known_accepted_reads_what_a_check_remembers():
    """Only texts the check accepted (and remembered) are known; anything else is asked of the check."""
    import pytest

    from webhook.names import is_valid_label_value, known_accepted

    assert is_valid_label_value("known-ok") == []
    assert known_accepted(is_valid_label_value, ["known-ok"])
    assert is_valid_label_value("-bad") and not known_accepted(is_valid_label_value, ["known-ok", "-bad"])
    assert not known_accepted(is_valid_label_value, ["never-asked-yet", 3])
    with pytest.raises(TypeError):
        known_accepted(is_valid_label_value, [["known-ok"]])
