"""The vocabulary of the offline slot rules: contractions, the regular-expression pieces a rule is built from
(a subject, the auxiliaries of a plain statement, names, places, numbers, nouns, times, dates) and the small
lexicons they need (roles, job nouns, diets, car brands, event nouns, preference categories)."""

from __future__ import annotations

import re

CONTRACTIONS = [
    (r"\b(I|i)'m\b", r"\1 am"), (r"\b(\w+)'ve\b", r"\1 have"), (r"\b(we|you|they)'re\b", r"\1 are"),
    (r"\b(I|i|we|you|they|he|she)'ll\b", r"\1 will"), (r"\b(I|i|we|you|they|he|she)'d\b", r"\1 would"),
    (r"\bcan't\b", "cannot"), (r"\bwon't\b", "will not"), (r"\b(\w+)n't\b", r"\1 not"),
    (r"\b(he|she|it|that)'s\b", r"\1 is"),
]  # fmt: skip
ROLES = (
    r"wife|husband|partner|spouse|boyfriend|girlfriend|fianc[ée]e?|sister|brother|mom|mum|mother|dad|father|"
    r"son|daughter|best friend|friend|roommate|flatmate|boss|manager|cousin|aunt|uncle|grandma|grandmother|"
    r"grandpa|grandfather|niece|nephew|colleague|coworker|neighbou?r|therapist|doctor|dog|cat|puppy|kitten"
)
NAME = r"(?-i:[A-Z][\w'&.-]*(?:(?:\s+(?:of|de|du|la|le|upon|on|the))?\s+[A-Z][\w'&.-]*){0,4})"
SUBJ = (
    rf"(?P<subj>\bI\b|\bwe\b|\b(?:my|our) (?:(?:older|younger|little|big|new|best) )?(?:{ROLES})\b"
    rf"(?:,? (?-i:[A-Z][a-z]+)\b)?|(?-i:\b[A-Z][a-z]{{2,}}\b))"
)
# what may stand between a subject and its predicate in a plain statement (no wish, condition or modal)
AUX = (
    r"(?:\s+(?:now|currently|still|just|finally|recently|actually|also|really|usually|normally|typically|"
    r"generally|always|often|officially|already|eventually|only|mostly|basically|have|has|had|am|are|is|was|"
    r"were|will|been|be|do|does|did|going to|gonna|even|then|soon|back|both|all))*\s+"
)
HEAD = SUBJ + AUX
VALUE = r"(?P<val>[\w'&.-]+(?:\s+(?!(?:and|but|because|so|which|who|where|when|since|for|with|at|in|on|to|from|as|if|than|while|though|although|after|before|over|rather|instead|now|these|anymore|again)\b)[\w'&.-]+){0,4})"
NUM = r"(?P<num>\d+|a single|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
NOUNS = r"(?P<noun>(?:[a-z][a-z'-]*\s+)?[a-z][a-z'-]*)\b"
ADJ = r"(?:(?:different|separate|more|other|new|free|little|big|small|adorable|rescue|beautiful|amazing|great|good|old|young|lovely|cute|black|white|orange|grey|gray|stray|pet|national|local|Korean|Italian|Japanese|Chinese|Mexican|Thai|Indian|French)\s+){0,2}"
PARTICIPLE = (
    r"(?:\w+ed|been|taken|had|done|seen|made|gone|run|read|written|eaten|met|flown|driven|ridden|swum|won|lost|"
    r"got|gotten|bought|brought|given|grown|known|shown|thrown|worn|sold|spent|built|caught|taught|found|held|"
    r"kept|left|paid|sent|told|heard|drunk|sung|begun|become|come|hit|cut|put|set)"
)
FUNCTION_WORDS = {
    "this", "that", "these", "those", "so", "now", "already", "yet", "as", "is", "was", "are", "were", "since",
    "because", "which", "who", "in", "on", "at", "to", "for", "of", "with", "i", "we", "my", "our", "the", "a",
    "an", "and", "or", "but", "more", "than", "it", "they", "you", "be", "been", "not", "very", "too", "from",
}  # fmt: skip
NOT_COUNTED = {
    "days", "weeks", "months", "years", "hours", "minutes", "seconds", "times", "questions", "ideas", "options",
    "things", "ways", "reasons", "kinds", "types", "thoughts", "words", "steps", "points", "tips", "decades",
    "nights", "mornings", "evenings", "weekends", "miles", "kilometers", "km", "pounds", "kg", "dollars",
    "bucks", "percent", "hundreds", "thousands", "millions", "lots", "tons", "bits", "others", "ones'",
}  # fmt: skip
PLACE = NAME + r"(?:,\s*(?-i:[A-Z][\w.-]*))?"
WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
TIMEWORD = (
    rf"(?:{WEEKDAY}|weekdays|weekends?|\d{{1,2}}(?::\d\d)?\s*[ap]\.?m\.?|noon|midnight|lunch(?:time)?|"
    r"(?:early |late )?(?:morning|afternoon|evening|night)s?)"
)
WHEN = (
    rf"(?P<when>(?:(?:on|at|in the|every|each|around|by|after|before|during)\s+)?{TIMEWORD}"
    rf"(?:(?:,\s*(?:and\s+)?|\s+and\s+|\s+(?:at|on|in the)\s+)(?:(?:on|at|in the|every)\s+)?{TIMEWORD})*"
    r"|(?:\d+|once|twice|two|three|four|five|six|seven) (?:times )?(?:a|per) (?:week|day|month)|daily|weekly)"
)
ACTIVITIES = {
    "gym": "gym", "the gym": "gym", "work out": "gym", "workout": "gym", "exercise": "gym", "lift": "gym",
    "run": "running", "go running": "running", "go for a run": "running", "jog": "running", "running": "running",
    "swim": "swimming", "go swimming": "swimming", "pool": "swimming", "the pool": "swimming",
    "do yoga": "yoga", "yoga": "yoga", "meditate": "meditation", "practice": "practice", "train": "training",
    "go climbing": "climbing", "climb": "climbing", "cycle": "cycling", "bike": "cycling", "ride": "cycling",
}  # fmt: skip
ACTIVITY = r"(?P<act>go running|go for a run|go swimming|go climbing|work out|do yoga|meditate|exercise|run|jog|swim|lift|train|practice|climb|cycle|bike)"
PLACE_ACTIVITY = r"(?P<act>the gym|gym|the pool|pool|yoga|running|workouts?)"
ROLE_NOUNS = (
    r"engineer|developer|programmer|manager|designer|teacher|professor|nurse|doctor|physician|analyst|scientist|"
    r"consultant|lawyer|attorney|accountant|writer|editor|journalist|student|intern|director|chef|cook|architect|"
    r"researcher|administrator|officer|assistant|specialist|coordinator|lead|head|president|founder|ceo|cto|"
    r"cfo|vp|photographer|artist|musician|pharmacist|therapist|dentist|technician|electrician|plumber|"
    r"mechanic|pilot|salesperson|representative|recruiter|librarian|barista|waiter|waitress|cashier|clerk|"
    r"supervisor|executive|associate|producer|marketer|strategist|owner|tutor|coach|trainer|paralegal"
)
TITLE = rf"(?P<val>(?:[\w-]+\s+){{0,3}}(?:{ROLE_NOUNS}))\b"
DIETS = (
    r"vegan|vegetarian|pescatarian|keto|paleo|gluten-free|dairy-free|plant-based|carnivore|flexitarian|"
    r"low-carb|mediterranean|raw vegan"
)
BRANDS = (
    r"honda|toyota|tesla|ford|bmw|audi|mercedes(?:-benz)?|volkswagen|vw|subaru|mazda|nissan|hyundai|kia|"
    r"chevy|chevrolet|jeep|volvo|porsche|lexus|acura|prius|civic|corolla|camry|rav4|mini|fiat|jaguar|"
    r"land rover|range rover|dodge|ram|gmc|cadillac|buick|lincoln|mitsubishi|rivian|polestar|vespa|"
    r"harley(?:-davidson)?|ducati|yamaha|kawasaki|suzuki"
)
VEHICLE = rf"(?P<val>(?:{BRANDS})(?:\s+[\w-]+){{0,3}}?|{NAME})(?=\s*(?:[,.;!?)]|$|\s(?:and|but|now|these|which|that|because|so|since|for|to|with)\b))"
EVENT_NOUNS = (
    r"marathon|half marathon|race|wedding|trip|flight|vacation|holiday|party|birthday party|interview|exam|"
    r"test|concert|surgery|operation|appointment|meeting|conference|move|moving day|graduation|recital|"
    r"presentation|launch|deadline|ceremony|reunion|visit|tour|game|match|tournament|show|gig|performance|"
    r"baby shower|shower|housewarming|retreat|camp|hike|cruise|defense|audition|checkup|check-up"
)
DATE = (
    r"(?P<when>(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?"
    r"(?:,?\s+(?:19|20)\d\d)?|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
    r"(?:,?\s+(?:19|20)\d\d)?|(?:19|20)\d\d-\d\d-\d\d|next (?:week|month|year|(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
    r"|(?:this|next) (?:coming )?weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(?:\s+(?:19|20)\d\d)?))\b"
)
FAVOURITE_STOP = r"(?=\s*(?:[,.;!?)]|$|\s(?:and|but|because|so|which|though|these days|now|right now)\b))"
CATEGORIES = {
    "drink": "tea coffee espresso latte cappuccino matcha juice soda water beer wine whiskey cocktail smoothie "
    "kombucha milk",
    "food": "sushi pizza ramen pasta tacos burgers burger curry salad steak noodles dumplings pho",
    "music": "jazz rock pop hip-hop rap classical country metal techno house blues reggae",
    "seat": "aisle window",
    "season": "summer winter spring autumn fall",
    "pet": "cats dogs cat dog",
    "workout time": "mornings evenings morning evening",
    "transport": "train bus car bike plane flying driving",
    "reading format": "ebooks audiobooks paperbacks hardcovers kindle",
}
CATEGORY_OF = {w: cat for cat, words in CATEGORIES.items() for w in words.split()}


CLOCK = re.compile(r"\b\d{1,2}(?::\d\d)?\s*[ap]\.?m\.?|\bnoon\b|\bmidnight\b|\blunch(?:time)?\b", re.I)
DAY_PART = re.compile(r"\b(?:early |late )?(?:morning|afternoon|evening|night)s?\b", re.I)
DAYS = re.compile(rf"\b(?:{WEEKDAY}|weekdays|weekends?)\b", re.I)
FREQUENCY = re.compile(
    r"\b(?:\d+|once|twice|two|three|four|five|six|seven)\s+(?:times\s+)?(?:a|per)\s+(?:week|day|month)\b|\b(?:daily|weekly)\b",
    re.I,
)


NEG = r"(?P<neg>(?:do|does|did) not\s+|no longer\s+|not\s+|never\s+|used to\s+|stopped\s+)?"
