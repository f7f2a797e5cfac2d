"""The hubs a clause is about: its subject (a person of the conversation, a named thing, someone's
possession: "Melanie's kids") and the themes it speaks of — the things and activities a person returns to
("camping", "pottery class", "adoption agency"), read as the lemma of a content noun phrase or an activity
gerund of the clause.

A theme is titled by a common noun phrase in lower case, so the memory loop can tell it from a proper name:
a theme becomes a concept only once it recurs across conversations (`memory_core.ontology.titles.
is_theme_title`); until then it is a residual judged again by the next run.
"""

from __future__ import annotations

from memory_core.extraction.reading import Clause
from memory_core.extraction.referents import HUB_NOUNS, KIN
from memory_core.nlp.doc import Token

# nouns too general to be what a memory is about
GENERIC_NOUNS = set(
    "thing things stuff time times lot lots way ways day days week weeks month months year years people person "
    "one ones bit kind sort idea ideas life world moment moments fun blast place places part parts piece pieces "
    "reason reasons experience experiences feeling feelings sense chance opportunity step steps start end point "
    "question questions answer answers word words journey hope love help advice matter matters fact facts "
    "situation problem problems issue issues deal something anything everything nothing someone everyone anyone "
    "side area level number amount type types example examples case cases sort kinds morning evening night "
    "afternoon today tomorrow yesterday weekend minute minutes hour hours second seconds while future past "
    "present rest lot name names self others other guy guys stuff yeah thanks difference impact role goal goals "
    "dream dreams plan plans mind heart soul gift job work tip tips news update updates note notes pic pics "
    "photo photos picture pictures shot video post image look view support effort efforts progress success "
    "joy happiness peace energy vibe vibes memory memories touch care attention interest list story stories "
    "top face faces background reminder reminders source need needs detail details process sign signs event "
    "events chat eye eyes fan fans pattern patterns activity activities skill skills chapter change changes "
    "challenge challenges voice path paths expression emotion emotions connection connections comfort outlet "
    "woman women man men folk folks kind color colors colour colours design designs table leaf leaves rock "
    "rocks building stuff top bottom front back middle inside outside piece art thing deal fact lesson lessons "
    "choice choices option options decision decisions opportunity opportunities meaning purpose value values "
    "feel vibe mood spirit sight view views smile smiles laugh tear tears hand hands head heads person "
    "community group team type stage phase moment season".split()
)
# activity gerunds worth a theme; light ones ("doing", "going", "getting") are not
LIGHT_GERUNDS = set(
    "doing going getting making having being trying looking thinking feeling taking saying telling seeing "
    "knowing coming giving keeping letting putting working talking wanting using starting finishing spending "
    "helping finding meeting watching waiting asking sharing living learning growing loving hoping planning "
    "enjoying checking figuring following moving reading writing".split()
)
ARGUMENT_DEPS = {
    "dobj",
    "pobj",
    "attr",
    "oprd",
    "conj",
    "appos",
    "nsubj",
    "nsubjpass",
    "xcomp",
    "pcomp",
    "acomp",
}


def theme_titles(tokens: list[Token], any_role: bool = False) -> list[tuple[str, Token]]:
    """(theme title, its token) for the content noun phrases and activity gerunds among `tokens` (in any
    grammatical role with `any_role`: an image caption is a bare noun phrase)."""
    out: dict[str, Token] = {}
    for t in tokens:
        title = _theme(t, any_role)
        if title and title not in out:
            out[title] = t
    return list(out.items())


def _theme(t: Token, any_role: bool = False) -> str:
    if t.doc.ent_of[t.i] >= 0:
        return ""  # a name is a hub of its own
    if t.pos == "NOUN" and (any_role or t.dep in ARGUMENT_DEPS | {"compound"}):
        if t.dep == "compound":
            return ""
        lemma = t.lemma.lower()
        if lemma in GENERIC_NOUNS or t.lower in GENERIC_NOUNS or len(lemma) < 3 or not lemma.isalpha():
            return ""
        if any(c.dep == "poss" for c in t.children) and lemma in HUB_NOUNS:
            return ""  # "my kids": the owner's possession hub
        if lemma in KIN or t.lower in KIN or t.dep == "appos":
            return ""  # people are persons, not themes; "Oscar, my guinea pig": a role, said of a name
        compounds = [c for c in t.children if c.dep == "compound" and c.pos == "NOUN" and c.i == t.i - 1]
        words = [c.lower for c in compounds] + [lemma]
        return " ".join(words)
    if t.tag == "VBG" and t.dep in ("xcomp", "dobj", "pcomp", "pobj", "nsubj", "csubj", "conj", "advcl"):
        low = t.lower
        if low in LIGHT_GERUNDS or len(low) < 5 or not low.isalpha():
            return ""
        if any(c.dep in ("dobj", "prep") for c in t.children) and low not in (
            "camping",
            "hiking",
            "painting",
        ):
            return ""  # "visiting my parents": an act with an object, not an activity on its own
        return low
    return ""


def possession_hub(clause: Clause) -> str:
    """The subject's hub title when the subject is someone's possession or a named referent."""
    subject = clause.subject
    if subject is None or subject.kind in ("speaker", "listener"):
        return ""
    return subject.hub
