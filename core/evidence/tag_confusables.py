"""Characters that read as the letters and marks of an EXTERNAL-CONTENT tag.

Used only to *detect* forged fences (see :mod:`core.evidence.wrapping`); nothing here rewrites
content. Generated from Unicode's ``confusables.txt`` (as shipped in the ``confusable_homoglyphs``
3.3.1 wheel of January 2024, file ``confusables.json``) rather than adding that package as a
runtime dependency: it is a 900 kB table to answer a question about 13 characters, it would have to
be carried into the PyInstaller bundle, and the project's release cadence is slow. Kept are the
single-character look-alikes of ``E X T R N A L C O < > / -`` (either case) whose NFKD form does not
already reduce to that character -- NFKD handles full-width and mathematical letters by itself.

To regenerate (with the wheel unpacked next to the script)::

    import json, unicodedata as u
    data = json.load(open("confusable_homoglyphs/confusables.json"))
    for target in "EXTRNALCOextrnalco<>/-":
        for entry in data.get(target, []):
            c = entry["c"]
            base = "".join(x for x in u.normalize("NFKD", c) if not u.combining(x))
            if len(c) == 1 and base.lower() != target.lower():
                print(repr(c), "->", target.lower())

``SMALL_CAPITALS`` adds the phonetic small capitals of the tag's letters, which read as those
letters but are not listed as confusables of them.
"""

from __future__ import annotations

__all__ = ["LOOKALIKES", "SMALL_CAPITALS"]

LOOKALIKES: dict[str, str] = {
    "-": "\u02d7\u2010\u2011\u2012\u2013\u2043\u2212\u2796\u2cba\ufe58",
    "/": "\u1735\u2041\u2044\u2215\u2571\u27cb\u29f8\u2cc6\u2f03\u3033\u30ce\u31d3\u4e3f\U0001d23a",
    "<": "\u02c2\u1438\u16b2\u2039\u276e\U0001d236",
    ">": "\u02c3\u1433\u203a\u276f\U00016f3f\U0001d237",
    "a": "\u0251\u0391\u03b1\u0410\u0430\u13aa\u15c5\u237a\ua4ee\U000102a0\U00016f40\U0001d6a8\U0001d6c2\U0001d6e2\U0001d6fc\U0001d71c\U0001d736\U0001d756\U0001d770\U0001d790\U0001d7aa",
    "c": "\u03f2\u03f9\u0421\u0441\u13df\u1d04\u2ca4\u2ca5\ua4da\uabaf\U000102a2\U00010302\U00010415\U0001043d\U0001051c\U000118e9\U000118f2\U0001f74c",
    "e": "\u0395\u0415\u0435\u04bd\u13ac\u212e\u22ff\u2d39\ua4f0\uab32\U00010286\U000118a6\U000118ae\U0001d6ac\U0001d6e6\U0001d720\U0001d75a\U0001d794",
    "l": "1I|\u0196\u01c0\u0399\u0406\u04c0\u06f1\u13de\u14aa\u16c1\u2110\u2111\u2160\u2223\u23fd\u2c92\u2cd0\u2d4f\ua4e1\ua4f2\uff29\uffe8\U0001028a\U00010309\U00010320\U0001041b\U00010526\U000118a3\U000118b2\U00016f16\U00016f28\U0001d22a\U0001d408\U0001d43c\U0001d470\U0001d4d8\U0001d540\U0001d574\U0001d5a8\U0001d5dc\U0001d610\U0001d644\U0001d678\U0001d6b0\U0001d6ea\U0001d724\U0001d75e\U0001d798\U0001d7cf\U0001d7d9\U0001d7e3\U0001d7ed\U0001d7f7\U0001fbf1",
    "n": "\u039d\u0578\u057c\u2c9a\ua4e0\U00010513\U0001d6b4\U0001d6ee\U0001d728\U0001d762\U0001d79c",
    "o": "0\u039f\u03bf\u03c3\u041e\u043e\u0555\u0585\u06f5\u0966\u09e6\u0a66\u0ae6\u0b20\u0b66\u0be6\u0c02\u0c66\u0c82\u0ce6\u0d02\u0d20\u0d66\u0d82\u0e50\u0ed0\u101d\u1040\u10ff\u12d0\u1d0f\u1d11\u2c9e\u2c9f\u2d54\u3007\ua4f3\uab3d\U00010292\U000102ab\U00010404\U0001042c\U000104c2\U000104ea\U00010516\U000114d0\U000118b5\U000118c8\U000118d7\U000118e0\U0001d6b6\U0001d6d0\U0001d6d4\U0001d6f0\U0001d70a\U0001d70e\U0001d72a\U0001d744\U0001d748\U0001d764\U0001d77e\U0001d782\U0001d79e\U0001d7b8\U0001d7bc\U0001d7ce\U0001d7d8\U0001d7e2\U0001d7ec\U0001d7f6\U0001fbf0",
    "r": "\u01a6\u0433\u13a1\u13d2\u1587\u1d26\u2c85\ua4e3\uab47\uab48\uab81\U000104b4\U00016f35\U0001d216",
    "t": "\u03a4\u0422\u13a2\u22a4\u27d9\u2ca6\ua4d4\U00010297\U000102b1\U00010315\U000118bc\U00016f0a\U0001d6bb\U0001d6f5\U0001d72f\U0001d769\U0001d7a3\U0001f768",
    "x": "\u00d7\u03a7\u0425\u0445\u1541\u157d\u166d\u166e\u16b7\u2573\u292b\u292c\u2a2f\u2cac\u2d5d\ua4eb\ua7b3\U00010290\U000102b4\U00010317\U00010322\U00010527\U000118ec\U0001d6be\U0001d6f8\U0001d732\U0001d76c\U0001d7a6",
}

SMALL_CAPITALS: dict[str, str] = {
    "a": "\u1d00",
    "e": "\u1d07",
    "l": "\u029f",
    "n": "\u0274",
    "r": "\u0280",
    "t": "\u1d1b",
}
