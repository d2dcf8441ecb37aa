"""What the docs tests read in a page: the prose of a markdown page or a man
page, cut into statements; the anchors of a markdown page's headings, its
relative links (test_docs.py on the sources, test_install.py on the
installed manual)."""
import re


def prose(text):
    """Markdown without its fenced code blocks and inline code spans."""
    text = re.sub(r"^ *(```|~~~).*?^ *\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(text):
    """The anchors GitHub gives a page's headings: lowercase, punctuation but
    '-' and '_' dropped, spaces as '-', repeats numbered."""
    seen, out = {}, set()
    for heading in re.findall(r"^#{1,6} +(.*?) *#* *$", re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M),
                              flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def relative_links(text):
    """(target, anchor) of every relative markdown link: [text](target#anchor)."""
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        yield path, anchor


def man_prose(text):
    """A man page's text: paragraph macros as blank lines, font macros as their words, escapes resolved."""
    text = re.sub(r"^\.(?:PP|TP|IP|SH|SS|br|TH|RS|RE|nf|fi)\b.*$", "", text, flags=re.M)
    text = re.sub(r"^\.\\\".*$", "", text, flags=re.M)  # comments
    text = re.sub(r"^\.[A-Z]{1,2} ?", "", text, flags=re.M)
    return text.replace("\\-", "-").replace("\\(dq", '"').replace('"', "")


def statements(text):
    """The sentences of prose: its paragraphs, list items, table rows and headings, each cut at full stops."""
    for unit in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\||#))", text):
        yield from re.split(r"(?<=\.)\s+(?=[A-Z(*])", " ".join(unit.split()))
