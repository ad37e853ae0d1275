"""ISO 639-3 → ISO 639-1, script and name of the LASER Tatoeba languages, and language codes normalised to ISO 639-3.

The project's configurations name languages in several ways (QE pairs ``en-de``, MASSIVE
locales ``de-DE``, the STS corpus's ``deu: de``); the Tatoeba files use ISO 639-3. To decide
whether a Tatoeba language was in a method's training data, every code is mapped to the
ISO 639-3 code of the Tatoeba file (:func:`to_iso639_3`).

The table is data, not logic: one row per Tatoeba language (and English, the pivot). Where
the Tatoeba code is an individual language of a macrolanguage (``cmn`` Mandarin in ``zh``,
``pes`` Iranian Persian in ``fa``, ``zsm`` Standard Malay in ``ms``, ``swh`` Swahili in ``sw``,
``lvs`` Standard Latvian in ``lv``), its ISO 639-1 column is the macrolanguage's two-letter
code, as MASSIVE's locales use it (``zh-CN`` is Mandarin). Languages without an ISO 639-1
code (Cantonese, Wu, the Arabic varieties, ...) have none, so no two-letter code maps to them.
The script is ISO 15924 of the Tatoeba file's own letters (checked against the files:
``Latn+Cyrl`` where both exceed a quarter of the letters).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache

# iso639_3,iso639_1,script,name
_TABLE = """\
afr,af,Latn,Afrikaans
amh,am,Ethi,Amharic
ang,,Latn,Old English
ara,ar,Arab,Arabic
arq,,Arab,Algerian Arabic
arz,,Arab,Egyptian Arabic
ast,,Latn,Asturian
awa,,Deva,Awadhi
aze,az,Latn,Azerbaijani
bel,be,Cyrl,Belarusian
ben,bn,Beng,Bengali
ber,,Latn,Berber
bos,bs,Latn,Bosnian
bre,br,Latn,Breton
bul,bg,Cyrl,Bulgarian
cat,ca,Latn,Catalan
cbk,,Latn,Chavacano
ceb,,Latn,Cebuano
ces,cs,Latn,Czech
cha,ch,Latn,Chamorro
cmn,zh,Hani,Mandarin Chinese
cor,kw,Latn,Cornish
csb,,Latn,Kashubian
cym,cy,Latn,Welsh
dan,da,Latn,Danish
deu,de,Latn,German
dsb,,Latn,Lower Sorbian
dtp,,Latn,Central Dusun
ell,el,Grek,Greek
epo,eo,Latn,Esperanto
est,et,Latn,Estonian
eus,eu,Latn,Basque
fao,fo,Latn,Faroese
fin,fi,Latn,Finnish
fra,fr,Latn,French
fry,fy,Latn,Western Frisian
gla,gd,Latn,Scottish Gaelic
gle,ga,Latn,Irish
glg,gl,Latn,Galician
gsw,,Latn,Swiss German
heb,he,Hebr,Hebrew
hin,hi,Deva,Hindi
hrv,hr,Latn,Croatian
hsb,,Latn,Upper Sorbian
hun,hu,Latn,Hungarian
hye,hy,Armn,Armenian
ido,io,Latn,Ido
ile,ie,Latn,Interlingue
ina,ia,Latn,Interlingua
ind,id,Latn,Indonesian
isl,is,Latn,Icelandic
ita,it,Latn,Italian
jav,jv,Latn,Javanese
jpn,ja,Jpan,Japanese
kab,,Latn,Kabyle
kat,ka,Geor,Georgian
kaz,kk,Cyrl,Kazakh
khm,km,Khmr,Khmer
kor,ko,Hang,Korean
kur,ku,Latn,Kurdish
kzj,,Latn,Coastal Kadazan
lat,la,Latn,Latin
lfn,,Latn+Cyrl,Lingua Franca Nova
lit,lt,Latn,Lithuanian
lvs,lv,Latn,Standard Latvian
mal,ml,Mlym,Malayalam
mar,mr,Deva,Marathi
max,,Latn,North Moluccan Malay
mhr,,Cyrl,Eastern Mari
mkd,mk,Cyrl,Macedonian
mon,mn,Cyrl,Mongolian
nds,,Latn,Low German
nld,nl,Latn,Dutch
nno,nn,Latn,Norwegian Nynorsk
nob,nb,Latn,Norwegian Bokmål
nov,,Latn,Novial
oci,oc,Latn,Occitan
orv,,Cyrl,Old East Slavic
pam,,Latn,Kapampangan
pes,fa,Arab,Iranian Persian
pms,,Latn,Piedmontese
pol,pl,Latn,Polish
por,pt,Latn,Portuguese
ron,ro,Latn,Romanian
rus,ru,Cyrl,Russian
slk,sk,Latn,Slovak
slv,sl,Latn,Slovenian
spa,es,Latn,Spanish
sqi,sq,Latn,Albanian
srp,sr,Latn+Cyrl,Serbian
swe,sv,Latn,Swedish
swg,,Latn,Swabian
swh,sw,Latn,Swahili
tam,ta,Taml,Tamil
tat,tt,Cyrl,Tatar
tel,te,Telu,Telugu
tgl,tl,Latn,Tagalog
tha,th,Thai,Thai
tuk,tk,Latn,Turkmen
tur,tr,Latn,Turkish
tzl,,Latn,Talossan
uig,ug,Arab,Uyghur
ukr,uk,Cyrl,Ukrainian
urd,ur,Arab,Urdu
uzb,uz,Latn+Cyrl,Uzbek
vie,vi,Latn,Vietnamese
war,,Latn,Waray
wuu,,Hani,Wu Chinese
xho,xh,Latn,Xhosa
yid,yi,Hebr,Yiddish
yue,,Hani,Cantonese
zsm,ms,Latn,Standard Malay
eng,en,Latn,English
"""


@dataclass(frozen=True)
class Language:
    """One row of the table: ISO 639-3 code, ISO 639-1 code (``""`` if none), ISO 15924 script, English name."""

    iso639_3: str
    iso639_1: str
    script: str
    name: str


@lru_cache(maxsize=1)
def language_table() -> dict[str, Language]:
    """``{iso639_3: Language}`` for the 112 LASER Tatoeba languages and English."""
    rows = csv.reader(io.StringIO(_TABLE))
    return {row[0]: Language(*row) for row in rows}


@lru_cache(maxsize=1)
def _by_iso639_1() -> dict[str, str]:
    out: dict[str, str] = {}
    for lang in language_table().values():
        if lang.iso639_1:
            if lang.iso639_1 in out:  # the table must stay a function of the two-letter code
                raise AssertionError(f"ISO 639-1 {lang.iso639_1!r} names both {out[lang.iso639_1]} and {lang.iso639_3}")
            out[lang.iso639_1] = lang.iso639_3
    return out


def to_iso639_3(code: str) -> str | None:
    """The Tatoeba (ISO 639-3) code of a configured language code, or ``None`` if no Tatoeba language has it.

    Accepts ISO 639-1 (``de``), ISO 639-3 (``deu``) and locales (``de-DE``, ``zh_CN``, ``cmn_Hans``):
    the part before the first ``-`` or ``_`` is the language.

    Examples:
        ``to_iso639_3("de-DE") == "deu"``, ``to_iso639_3("zh") == "cmn"``, ``to_iso639_3("ne") is None``.
    """
    base = str(code).strip().replace("_", "-").split("-", 1)[0].lower()
    if len(base) == 2:
        return _by_iso639_1().get(base)
    if len(base) == 3:  # already ISO 639-3 (a language outside the table keeps its code)
        return base
    return None
