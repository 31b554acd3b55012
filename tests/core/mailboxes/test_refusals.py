"""One domain's answers: held back while they could still be a refusal of us, then released."""

from __future__ import annotations

from pipeline.core.domains.dns import DnsStatus
from pipeline.core.mailboxes.refusals import DomainAnswers, refusal_words
from pipeline.core.mailboxes.types import Mailbox, MailboxResult, Target

UNKNOWN = "550 5.1.1 <{a}>: Recipient address rejected: User unknown (queue 4F2A1C)"


def target(local: str) -> Target:
    address = f"{local}@acme-shop.com"
    return Target(address, address, "acme-shop.com", DnsStatus.MX)


def refused(local: str) -> MailboxResult:
    return MailboxResult(Mailbox.NO_SUCH_USER, UNKNOWN.format(a=f"{local}@acme-shop.com"))


def collect() -> tuple[DomainAnswers, dict[str, Mailbox]]:
    done: dict[str, Mailbox] = {}
    return DomainAnswers(lambda t, r: done.__setitem__(t.key, r.outcome)), done


def test_the_recipient_and_varying_tokens_are_taken_out() -> None:
    one = refusal_words(UNKNOWN.format(a="ann@x.com"), "ann@x.com")
    two = refusal_words(UNKNOWN.format(a="bob@x.com").replace("4F2A1C", "77B0"), "bob@x.com")
    assert one == two == "# # <<rcpt>>: recipient address rejected: user unknown (queue #"


def test_refusals_wait_for_an_accepted_address_then_stand() -> None:
    answers, done = collect()
    answers.add(target("x"), refused("x"))
    assert done == {}  # held: nothing accepted yet
    answers.add(target("ann"), MailboxResult(Mailbox.OK))
    answers.add(target("y"), refused("y"))
    assert done == {
        "x@acme-shop.com": Mailbox.NO_SUCH_USER,
        "ann@acme-shop.com": Mailbox.OK,
        "y@acme-shop.com": Mailbox.NO_SUCH_USER,
    }


def test_three_alike_and_nothing_accepted_are_a_refusal_of_us() -> None:
    answers, done = collect()
    for local in ("x", "y", "z"):
        answers.add(target(local), refused(local))
    answers.add(target("w"), MailboxResult(Mailbox.BLOCKED, "550 5.7.1 blocked"))
    answers.close()
    assert set(done.values()) == {Mailbox.REFUSES_ALL, Mailbox.BLOCKED}
    assert done["w@acme-shop.com"] is Mailbox.BLOCKED


def test_accepted_answers_wait_for_the_catch_all_probe() -> None:
    answers, done = collect()
    answers.catch_all_known = False
    answers.add(target("ann"), MailboxResult(Mailbox.OK))
    assert answers.awaiting_catch_all and done == {}
    answers.catch_all_learned(catch_all=True)
    assert done == {"ann@acme-shop.com": Mailbox.CATCH_ALL}


def test_a_probe_that_never_answers_leaves_accepted_answers_undecided() -> None:
    answers, done = collect()
    answers.catch_all_known = False
    answers.add(target("ann"), MailboxResult(Mailbox.OK))
    answers.close()
    assert done == {"ann@acme-shop.com": Mailbox.GREYLISTED}
