from dedup.encoding import declared_charset, decode_html

TEXT = "Café crème — naïve"


def test_utf8_declared_latin1_is_read_as_utf8():
    body = f'<meta charset="iso-8859-1"><p>{TEXT}</p>'.encode("utf-8")
    text, enc = decode_html(body)
    assert TEXT in text and enc == "utf-8"


def test_latin1_declared_utf8_is_read_as_cp1252():
    body = '<meta http-equiv="content-type" content="text/html; charset=utf-8"><p>Café crème naïve</p>'.encode("latin-1")
    text, enc = decode_html(body)
    assert "Café crème naïve" in text and enc == "cp1252"


def test_declared_charset_from_header_and_meta():
    assert declared_charset(b"<p>x</p>", "text/html; charset=ISO-8859-1") == "cp1252"
    assert declared_charset(b'<meta charset="windows-1251">') == "cp1251"
    assert declared_charset(b'<meta charset="bogus-xyz">') is None


def test_cyrillic_declared_cp1251():
    body = '<meta charset="windows-1251"><p>Привет мир, как дела у вас сегодня</p>'.encode("cp1251")
    text, enc = decode_html(body)
    assert "Привет мир" in text and enc == "cp1251"


def test_bom_and_str_passthrough():
    assert decode_html("\ufeffx".encode("utf-8"))[1] == "utf-8-sig"
    assert decode_html("already text") == ("already text", "str")


def test_binary_garbage_never_raises():
    text, enc = decode_html(bytes(range(256)) * 50)
    assert isinstance(text, str) and enc
