"""Following recent changes on a real local MediaWiki: order, continuation, filters, resume."""

from __future__ import annotations

import uuid

import pytest

from bot.changes import RecentChangesFeed, fetch_revisions, skip_reason
from bot.checkpoint import CheckpointFile
from bot.sidebot import CitationBot
from service.store import CheckRequest, Store


def unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def site(mediawiki):
    return mediawiki.pywikibot_site()


def test_changes_come_in_order_across_continuation_pages(mediawiki, site):
    feed = RecentChangesFeed(site, page_size=2)
    start = feed.latest()
    titles = [unique("Order") for _ in range(5)]
    revisions = [mediawiki.edit(t, f"Text {n}.", user="Alice") for n, t in enumerate(titles)]
    changes = list(feed.changes_after(start))
    assert [c.revision for c in changes] == revisions
    assert [c.title for c in changes] == titles
    assert feed.requests >= 4  # 5 changes, 2 per page: the feed followed `continue`
    # resuming after the third returns exactly the last two, and after the last nothing
    assert [c.revision for c in feed.changes_after(changes[2].position)] == revisions[3:]
    assert list(feed.changes_after(changes[-1].position)) == []


def test_bot_edits_other_namespaces_and_reverts_are_left_out(mediawiki, site):
    feed = RecentChangesFeed(site)
    start = feed.latest()
    title = unique("Filters")
    first = mediawiki.edit(title, "Stable text.<ref>[http://example.org/a A]</ref>", user="Admin")
    mediawiki.edit(title, "Vandalism.", user="Alice")
    rollback = mediawiki.call({"action": "rollback", "title": title, "user": "Alice",
                               "token": mediawiki.token("Admin", "rollback")}, "Admin", post=True)
    assert rollback["rollback"]["revid"]
    bad = mediawiki.edit(title, "Vandalism again.", user="Alice")
    mediawiki.edit(title, "", user="Admin", undo=str(bad), summary="")
    mediawiki.edit(title, "Vandalism, third time.", user="Alice")
    mediawiki.edit(title, "Stable text.<ref>[http://example.org/a A]</ref>", user="Alice", summary="restore")
    mediawiki.edit("Talk:" + title, "A talk page comment.", user="Alice")
    mediawiki.edit(unique("Bot edit"), "Written by a bot.", user="TestBot", bot=True)
    changes = list(feed.changes_after(start))
    assert all(c.namespace == 0 and not c.bot for c in changes)  # filtered by the server
    reasons = [(c.revision, skip_reason(c)) for c in changes]
    assert reasons[0] == (first, None)
    # rollback (mw-rollback), undo (mw-undo), and restoring an old text by hand (mw-manual-revert)
    assert [r for _, r in reasons] == [None, None, "revert", None, "revert", None, "revert"]


def test_moved_and_deleted_pages(mediawiki, site):
    moved, deleted = unique("Before move"), unique("Deleted")
    rev_moved = mediawiki.edit(moved, "Text.", user="Alice")
    rev_deleted = mediawiki.edit(deleted, "Text.", user="Alice")
    new_title = moved.replace("Before", "After")
    mediawiki.move(moved, new_title)
    mediawiki.delete(deleted)
    texts = fetch_revisions(site, [rev_moved, rev_deleted])
    assert texts[rev_moved].title == new_title and texts[rev_moved].text == "Text."
    assert rev_deleted not in texts


class StoreOnly:
    """The submit step without a queue: store rows only (the queue is tested with a worker)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: list[CheckRequest] = []

    def __call__(self, new: CheckRequest):
        self.calls.append(new)
        record, created = self.store.add_check(new)
        return record, created


def test_one_check_per_revision_with_only_the_added_citations(mediawiki, site, tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    submit = StoreOnly(store)
    feed = RecentChangesFeed(site)
    bot = CitationBot(site, feed, store, submit, CheckpointFile(tmp_path / "cp.json"), "testwiki")
    bot.start_position(None)
    title = unique("Citations")
    created = mediawiki.edit(title, "Old claim.<ref>[http://example.org/old Old]</ref>", user="Alice")
    edited = mediawiki.edit(title, "Old claim.<ref>[http://example.org/old Old]</ref> New claim."
                                   "<ref>{{cite web |url=http://example.org/new |title=New}}</ref>", user="Alice")
    mediawiki.edit(title, "Old claim.<ref>[http://example.org/old Old]</ref> New claim, reworded."
                          "<ref>{{cite web |url=http://example.org/new |title=New}}</ref> No ref here.", user="Alice")
    mediawiki.edit(unique("No refs"), "Just text.", user="Alice")
    assert bot.poll() == 4
    by_revision = {new.revision: new for new in submit.calls}
    assert set(by_revision) == {created, edited, edited + 1}
    assert [c.citation.url for c in by_revision[created].claims] == ["http://example.org/old"]
    assert [c.citation.url for c in by_revision[edited].claims] == ["http://example.org/new"]
    assert by_revision[edited].parent_revision == created
    # the reworded claim is a new (claim, citation) use: checked again
    assert [c.text for c in by_revision[edited + 1].claims] == ["New claim, reworded."]
    assert bot.counter["no citation"] == 1

    # a restarted bot resumes after the last handled change: nothing is submitted twice
    again = CitationBot(site, feed, store, submit, CheckpointFile(tmp_path / "cp.json"), "testwiki")
    assert again.checkpoint.position == bot.checkpoint.position
    assert again.poll() == 0 and len(submit.calls) == 3
    later = mediawiki.edit(title, "Later.<ref>[http://example.org/later L]</ref>", user="Alice")
    assert again.poll() == 1 and submit.calls[-1].revision == later


def test_a_revision_is_submitted_with_its_lead_and_body(mediawiki, site, tmp_path):
    """The worker checks a revision's uncited lead sentences against its body: the bot hands
    them over with the check, read from the revision's whole wikitext."""
    from test_lead import ARTICLE

    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    submit = StoreOnly(store)
    bot = CitationBot(site, RecentChangesFeed(site), store, submit, CheckpointFile(tmp_path / "cp.json"), "testwiki")
    bot.start_position(None)
    title = unique("Jane Example")
    revision = mediawiki.edit(title, ARTICLE.read_text(encoding="utf-8"), user="Alice")
    assert bot.poll() == 1
    new = submit.calls[-1]
    assert new.revision == revision and new.lead is not None
    lead = store.article_lead(new.id)
    assert lead is not None and lead.title == title
    assert [c.position for c in lead.claims] == [0, 1, 4, 5] and lead.cited == 3
    assert {b.section for b in lead.body} == {("Early life",), ("Career",), ("Career", "Essays")}
