"""Chinese and Japanese pages, which put no blanks between words, are read by the native extractor like
any other page (dedup/_scan.c ``is_cjk``): two Han or kana characters count as one word of the 20-word
prose rule and of the rows-of-links rule. Before, a line of them was one "word", never prose, and every
such page fell back to trafilatura (9-17 ms a page instead of ~1)."""
from __future__ import annotations

import lxml.html

import dedup.extract as ex
from dedup._scan import scan
from dedup.deduplicator import Deduplicator
from dedup.store import MemoryIndex
from dedup.text import split_sentences

# one story (written for this test), as two sites publish it; sentences of 40-70 characters
STORY = [
    "東京都港区の運河に架かる古い歩道橋が、老朽化のため来年の春から約半年間にわたって全面的に通行止めになると区が発表した。",
    "区の説明によると、昨年秋の定期点検で主桁の一部に深刻な腐食が見つかり、専門家の会議が早急な補修を求めていたという。",
    "通行止めの期間中は、約三百メートル離れた別の橋を使う迂回路が案内され、朝夕の時間帯には誘導員が配置される予定である。",
    "地元の商店会は、観光客の足が遠のくことを心配しており、工事の期間をできるだけ短くするよう区に要望書を提出している。",
    "区の担当者は、安全を最優先にしつつ、近隣の住民や店舗への影響が小さくなるよう工事の工程を工夫したいと話している。",
]
OTHER = [
    "大阪市の図書館で、戦前に発行された地元新聞の縮刷版が大量に見つかり、市は来年度からデジタル化して公開する方針を決めた。",
    "見つかったのは明治の終わりから昭和の初めにかけての約二千冊で、書庫の奥にあった木箱の中に保管されていたという。",
    "市の教育委員会は、当時の町の暮らしや商売の様子を伝える貴重な資料だとして、研究者と協力して内容を調べる予定である。",
    "公開の時期は未定だが、まずは傷みの激しいものから順に撮影を進め、閲覧室の端末で見られるようにしたいとしている。",
]


MENU = ["ホーム", "ニュース", "政治", "経済", "国際", "社会", "スポーツ", "エンタメ", "科学技術", "ライフスタイル",
        "地域の話題", "お問い合わせ"]


def page(site: str, title: str, paragraphs: list[str]) -> str:
    menu = " ".join(f'<a href="/{k}">{name}</a>' for k, name in enumerate(MENU))
    ranking = "".join(f'<li><a href="/r/{k}">{site}の人気記事ランキング第{k}位の見出しがここに入ります</a></li>'
                      for k in range(1, 6))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><meta charset='utf-8'><title>{title} | {site}</title></head><body>"
            f"<header><div class='menu'>{menu}</div></header>"
            f"<div class='main'><h1>{title}</h1>{body}</div>"
            f"<div class='side'><h2>アクセスランキング</h2><ul>{ranking}</ul></div>"
            f"<footer>{site}の記事・写真の無断転載を禁じます。</footer></body></html>")


def test_a_japanese_sentence_is_prose_and_a_short_line_is_not():
    assert ex._is_prose(STORY[0])  # 58 characters, no blank: 29 words' worth
    assert not ex._is_prose("アクセスランキング")  # a heading
    assert not ex._is_prose("東京都港区の運河に架かる古い歩道橋が通行止めに")  # 23 characters: a headline
    # a row of Japanese links is prose by that count (12 labels, 45 characters), and a row of links by the
    # same count of the rows-of-links rule: left out
    menu = " ".join(f'<a href="/{k}">{name}</a>' for k, name in enumerate(MENU))
    assert ex._is_prose(" ".join(MENU))
    kept = scan(f"<html><body><p>{STORY[0]}</p><div>{menu}</div></body></html>", True, "example.org", True)[10]
    assert kept.split("\n") == [STORY[0]]


def test_a_japanese_story_on_two_sites_is_read_natively_and_flagged():
    dedup = Deduplicator(MemoryIndex())
    first, v1 = dedup.process_html(page("東都日報", "歩道橋が来春から通行止め", STORY), "http://toto.example/a/1")
    edited = STORY[:3] + [STORY[3].replace("要望書を提出している", "要望書を近く提出する方針だ")] + STORY[4:]
    second, v2 = dedup.process_html(page("関西新聞", "港区の歩道橋、来春から半年間通行止め", edited),
                                    "http://kansai.example/news/9")
    other, v3 = dedup.process_html(page("東都日報", "戦前の新聞縮刷版が大量に見つかる", OTHER), "http://toto.example/a/2")
    assert (first.extraction, second.extraction, other.extraction) == ("native", "native", "native")
    # the story's sentences, and none of the templates' menus, rankings or notices
    assert first.text.split("\n") == ["歩道橋が来春から通行止め", *STORY]
    for text in (first.text, second.text, other.text):
        assert "ホーム" not in text and "ランキング" not in text and "無断転載" not in text
    assert v1.status == "unique" and v3.status == "unique"
    assert v2.status in ("duplicate", "near_duplicate") and v2.duplicate_of == "http://toto.example/a/1"


def test_chinese_and_japanese_sentences_end_at_their_full_width_marks():
    """punkt knows "." "?" "!" followed by a blank; a Chinese or Japanese paragraph was one sentence (seed 003's
    chunks, seed 001's sentence tables, the sentence count). Cut after 。！？ outside brackets and quotes."""
    assert split_sentences("".join(STORY[:3])) == STORY[:3]
    assert split_sentences("区は「来春から閉鎖する。」と発表した。本当か！？ 詳細は未定。 Yes. Mr. Smith left.") == [
        "区は「来春から閉鎖する。」と発表した。", "本当か！？", "詳細は未定。", "Yes.", "Mr. Smith left."]
    assert split_sentences("他说：“我们明天出发。”然后离开了。第二句话在这里！") == [
        "他说：“我们明天出发。”然后离开了。", "第二句话在这里！"]
    first, _ = Deduplicator(MemoryIndex()).process_html(page("東都日報", "歩道橋が来春から通行止め", ["".join(STORY)]),
                                                        "http://toto.example/a/1")
    assert first.sentences == ["歩道橋が来春から通行止め", *STORY]  # one paragraph of five sentences


def test_a_page_of_japanese_teasers_is_a_listing():
    """A teaser's title is a link of 3 words or more: a Japanese headline (no blanks) was one word, so a section
    page of Japanese teasers was read as prose, not as a listing, and could be flagged as a copy of a page its
    snippets quote (a user's crawl: a home page flagged as a copy of a one-teaser tag page)."""
    titles = ["歩道橋が来春から通行止め", "戦前の新聞縮刷版が大量に見つかる", "商店会が区に要望書", "図書館が資料をデジタル化へ",
              "迂回路に誘導員を配置", "縮刷版を研究者と調査"]
    items = "".join(f"<li><h2><a href='/a/{k}'>{title}</a></h2><p>{text[:40]}…</p></li>"
                    for k, (title, text) in enumerate(zip(titles, [STORY[0], OTHER[0], STORY[3], OTHER[3], STORY[2],
                                                                   OTHER[2]])))
    html = f"<html><head><meta charset='utf-8'><title>東都日報</title></head><body><main><ul>{items}</ul></main></body></html>"
    first, _ = Deduplicator(MemoryIndex()).process_html(html.encode(), "http://toto.example/")
    assert first.extraction == "listing"
    assert first.text.split("\n")[0] == "- 歩道橋が来春から通行止め " + STORY[0][:40] + "…"
    # the lxml reader's title links (resiliparse's and trafilatura's path) count the same way as the scanner's
    links = ex.title_links(lxml.html.fromstring(html))
    assert [a.text for a in links] == titles and not ex.title_links(lxml.html.fromstring("<a href='/'>ホーム</a>"))


def test_the_scanner_and_the_tokenizer_agree_on_every_han_and_kana_character():
    # the ranges live twice, in dedup/_scan.c is_cjk (the extractor's word count, has_cjk) and in
    # dedup.text.HAN_KANA (the tokenizer's bigrams, the explain tree's words): one code point apart, a page
    # would be prose to one and not to the other
    import re

    from dedup._scan import has_cjk
    from dedup.text import HAN_KANA

    python = re.compile(f"[{HAN_KANA}]")
    differ = [hex(cp) for cp in range(0x2000, 0x10000) if not 0xD800 <= cp <= 0xDFFF
              and bool(has_cjk(chr(cp))) != bool(python.match(chr(cp)))]
    assert not differ, differ[:10]
