#!/usr/bin/env python3
"""Write the two small text corpora qkv's lessons train on.

    python3 tools/make_corpora.py

rewrites these four files, the same bytes on every run (a fixed seed, no
clock, no dependence on set or hash order):

    data/eng-fra/train.txt    "english<TAB>french", one pair a line   (lessons 08, 11)
    data/eng-fra/test.txt     held-out pairs for BLEU, none also in train
    data/sentiment/train.txt  "label<TAB>sentence", 1 positive, 0 negative (lesson 12)
    data/sentiment/test.txt   held-out sentences, none also in train

Every sentence is made here. The translation pairs come from a small grammar:
word lists that carry their French translation, gender, plural and
conjugation, and templates that put them together the way French does it
(colour adjectives after the noun, ne ... pas around the verb, object pronouns
before it, de instead of un/des after a negation, elision j' l' n' d' c',
agreement of adjectives and participles). About a hundred short idiomatic pairs
in the style of d2l's fra-eng file are written out by hand, among them d2l's
test sentences "Go.", "I lost.", "He's calm.", "I'm home.". Nothing is
downloaded or copied from any data set.

The French side is written like the raw file d2l reads: capitals and
punctuation as usual, and a narrow no-break space (U+202F) before ! and ?.
d2l's preprocessing (U+202F and U+00A0 to a space, lowercase, a space before
, . ! ?) turns "Va\u202f!" into "va !".

The held-out sentences are new combinations of the training vocabulary: the
script only keeps a test sentence if every one of its words (after d2l's
preprocessing) occurs at least twice in the training file, so a vocabulary
built with min_freq=2 covers the whole test split.

Plain python3, standard library only.
"""
import os
import random
from collections import Counter

SEED = 2024
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NNBSP = "\u202f"          # narrow no-break space, before ! and ? in French
MAX_WORDS = 8             # longest sentence, in words, on either side
EXTRA, RARE = 200, 3      # 200 more training pairs for words seen fewer than 3 times


# ============================================================================
# Spelling: elision, a/an, capitals, final punctuation
# ============================================================================

H_MUET = ("homme", "hôtel")          # elide before these as before a vowel


def fr_vowel(word):
    w = word.lower()
    return w[0] in "aeiouàâéèêëîïôùûœ" or w.startswith(H_MUET)


ELISION = {"je": "j'", "me": "m'", "te": "t'", "le": "l'", "la": "l'",
           "ne": "n'", "de": "d'", "ce": "c'"}
POSS_BEFORE_VOWEL = {"ma": "mon", "ta": "ton", "sa": "son"}   # ma amie -> mon amie


def french(tokens, end="."):
    """Join French words: je ai -> j'ai, ne est -> n'est, ma orange -> mon orange."""
    toks = " ".join(t for t in tokens if t).split(" ")
    out, i = [], 0
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if nxt and t in ELISION and fr_vowel(nxt):
            out.append(ELISION[t] + nxt)
            i += 2
            continue
        if nxt and t in POSS_BEFORE_VOWEL and fr_vowel(nxt):
            t = POSS_BEFORE_VOWEL[t]
        out.append(t)
        i += 1
    s = " ".join(out)
    s = s[0].upper() + s[1:]
    return s + end if end == "." else s + NNBSP + end


def english(tokens, end="."):
    """Join English words: a apple -> an apple; capital first letter."""
    toks = " ".join(t for t in tokens if t).split(" ")
    for i in range(len(toks) - 1):
        if toks[i] == "a" and toks[i + 1][0] in "aeiou":
            toks[i] = "an"
    s = " ".join(toks)
    return s[0].upper() + s[1:] + end


def d2l_tokens(line):
    """d2l's preprocess_nmt + tokenize_nmt for one sentence: its list of tokens."""
    text = line.replace("\u202f", " ").replace("\xa0", " ").lower()
    out = [" " + c if i > 0 and c in ",.!?" and text[i - 1] != " " else c
           for i, c in enumerate(text)]
    return "".join(out).split(" ")


def n_words(sentence):
    return sum(1 for t in d2l_tokens(sentence) if t not in ",.!?")


# ============================================================================
# Verbs. Present forms are for je, tu, il/elle, nous, vous, ils ("you" is
# always tu here, so vous is never used). English: base, 3rd singular, past.
# ============================================================================

class Verb:
    def __init__(self, en, inf, pres, pp, aux="avoir"):
        self.base, self.s, self.past = en.split()
        self.inf = inf
        self.pres = pres.split() if isinstance(pres, str) else pres
        self.pp = pp
        self.aux = aux

    def imperative(self):                  # tu form: mange, ouvre, cours, prends
        je, tu = self.pres[0], self.pres[1]
        return je if tu == je + "s" else tu


def er(inf, nous=None):
    """Present of a regular -er verb."""
    st = inf[:-2]
    return [st + "e", st + "es", st + "e", nous or st + "ons", st + "ez", st + "ent"]


VERBS = {
    # intransitive
    "eat":    Verb("eat eats ate", "manger", er("manger", "mangeons"), "mangé"),
    "sleep":  Verb("sleep sleeps slept", "dormir", "dors dors dort dormons dormez dorment", "dormi"),
    "run":    Verb("run runs ran", "courir", "cours cours court courons courez courent", "couru"),
    "swim":   Verb("swim swims swam", "nager", er("nager", "nageons"), "nagé"),
    "sing":   Verb("sing sings sang", "chanter", er("chanter"), "chanté"),
    "dance":  Verb("dance dances danced", "danser", er("danser"), "dansé"),
    "work":   Verb("work works worked", "travailler", er("travailler"), "travaillé"),
    "read":   Verb("read reads read", "lire", "lis lis lit lisons lisez lisent", "lu"),
    "write":  Verb("write writes wrote", "écrire", "écris écris écrit écrivons écrivez écrivent", "écrit"),
    "laugh":  Verb("laugh laughs laughed", "rire", "ris ris rit rions riez rient", "ri"),
    "cry":    Verb("cry cries cried", "pleurer", er("pleurer"), "pleuré"),
    "wait":   Verb("wait waits waited", "attendre", "attends attends attend attendons attendez attendent", "attendu"),
    "win":    Verb("win wins won", "gagner", er("gagner"), "gagné"),
    "lose":   Verb("lose loses lost", "perdre", "perds perds perd perdons perdez perdent", "perdu"),
    "play":   Verb("play plays played", "jouer", er("jouer"), "joué"),
    "leave":  Verb("leave leaves left", "partir", "pars pars part partons partez partent", "parti", "être"),
    "come":   Verb("come comes came", "venir", "viens viens vient venons venez viennent", "venu", "être"),
    "fall":   Verb("fall falls fell", "tomber", er("tomber"), "tombé", "être"),
    "stay":   Verb("stay stays stayed", "rester", er("rester"), "resté", "être"),
    # transitive
    "see":    Verb("see sees saw", "voir", "vois vois voit voyons voyez voient", "vu"),
    "have":   Verb("have has had", "avoir", "ai as a avons avez ont", "eu"),
    "want":   Verb("want wants wanted", "vouloir", "veux veux veut voulons voulez veulent", "voulu"),
    "like":   Verb("like likes liked", "aimer", er("aimer"), "aimé"),
    "love":   Verb("love loves loved", "aimer", er("aimer"), "aimé"),
    "drink":  Verb("drink drinks drank", "boire", "bois bois boit buvons buvez boivent", "bu"),
    "buy":    Verb("buy buys bought", "acheter", "achète achètes achète achetons achetez achètent", "acheté"),
    "find":   Verb("find finds found", "trouver", er("trouver"), "trouvé"),
    "open":   Verb("open opens opened", "ouvrir", "ouvre ouvres ouvre ouvrons ouvrez ouvrent", "ouvert"),
    "close":  Verb("close closes closed", "fermer", er("fermer"), "fermé"),
    "take":   Verb("take takes took", "prendre", "prends prends prend prenons prenez prennent", "pris"),
    "wash":   Verb("wash washes washed", "laver", er("laver"), "lavé"),
    "know":   Verb("know knows knew", "connaître", "connais connais connaît connaissons connaissez connaissent", "connu"),
    "help":   Verb("help helps helped", "aider", er("aider"), "aidé"),
    "call":   Verb("call calls called", "appeler", "appelle appelles appelle appelons appelez appellent", "appelé"),
    "watch":  Verb("watch watches watched", "regarder", er("regarder"), "regardé"),
}
ETRE = "suis es est sommes êtes sont".split()
AVOIR = "ai as a avons avez ont".split()
VOULOIR = VERBS["want"].pres
POUVOIR = "peux peux peut pouvons pouvez peuvent".split()


def agree(pp, g, pl):
    """Past participle (or adjective in -é) agreed in gender and number."""
    if g == "f":
        pp += "e"
    if pl and not pp.endswith("s"):
        pp += "s"
    return pp


# ============================================================================
# Adjectives: French forms masc sg, fem sg, masc pl, fem pl; "pre" ones go
# before the noun (petit, grand, bon, beau, nouveau, vieux, jeune), the rest
# after it. beau/nouveau/vieux have a form for a masculine noun that starts
# with a vowel: un bel arbre, un nouvel ami, un vieil homme.
# ============================================================================

class Adj:
    def __init__(self, en, forms, pre=False, before_vowel=None):
        self.en = en
        f = forms.split("|") if "|" in forms else forms.split()
        if len(f) == 1:
            f = f * 4                                # invariable
        elif len(f) == 2:
            f = [f[0], f[0], f[1], f[1]]             # rouge rouges
        self.forms = f
        self.pre = pre
        self.before_vowel = before_vowel

    def fr(self, g, pl, next_word=""):
        if self.before_vowel and g == "m" and not pl and next_word and fr_vowel(next_word):
            return self.before_vowel
        return self.forms[(2 if pl else 0) + (1 if g == "f" else 0)]


ADJ = {a.en: a for a in [
    # colours and other adjectives that follow the noun
    Adj("red", "rouge rouges"),
    Adj("black", "noir noire noirs noires"),
    Adj("white", "blanc blanche blancs blanches"),
    Adj("blue", "bleu bleue bleus bleues"),
    Adj("green", "vert verte verts vertes"),
    Adj("yellow", "jaune jaunes"),
    Adj("gray", "gris grise gris grises"),
    Adj("expensive", "cher chère chers chères"),
    Adj("heavy", "lourd lourde lourds lourdes"),
    Adj("clean", "propre propres"),
    Adj("dirty", "sale sales"),
    Adj("empty", "vide vides"),
    Adj("open", "ouvert ouverte ouverts ouvertes"),
    Adj("closed", "fermé fermée fermés fermées"),
    Adj("hot", "chaud chaude chauds chaudes"),
    Adj("cold", "froid froide froids froides"),
    Adj("fresh", "frais fraîche frais fraîches"),
    # adjectives that go before the noun
    Adj("small", "petit petite petits petites", pre=True),
    Adj("big", "grand grande grands grandes", pre=True),
    Adj("good", "bon bonne bons bonnes", pre=True),
    Adj("new", "nouveau nouvelle nouveaux nouvelles", pre=True, before_vowel="nouvel"),
    Adj("old", "vieux vieille vieux vieilles", pre=True, before_vowel="vieil"),
    Adj("beautiful", "beau belle beaux belles", pre=True, before_vowel="bel"),
    Adj("young", "jeune jeunes", pre=True),
    # said of people (after être)
    Adj("tired", "fatigué fatiguée fatigués fatiguées"),
    Adj("happy", "heureux heureuse heureux heureuses"),
    Adj("sad", "triste tristes"),
    Adj("sick", "malade malades"),
    Adj("calm", "calme calmes"),
    Adj("ready", "prêt prête prêts prêtes"),
    Adj("busy", "occupé occupée occupés occupées"),
    Adj("late", "en retard|en retard"),
    Adj("angry", "en colère|en colère"),
    Adj("tall", "grand grande grands grandes"),
    Adj("short", "petit petite petits petites"),
    Adj("rich", "riche riches"),
    Adj("alone", "seul seule seuls seules"),
    Adj("nice", "gentil gentille gentils gentilles"),
    Adj("married", "marié mariée mariés mariées"),
]}
PERSON_PRED = ["tired", "happy", "sad", "sick", "calm", "ready", "busy", "late", "angry",
               "tall", "short", "young", "old", "rich", "alone", "nice", "married"]
NO_VERY = {"ready", "alone", "married", "open", "closed", "empty",
           "red", "black", "white", "blue", "green", "yellow", "gray"}


# ============================================================================
# Nouns. attr: adjectives used before/after the noun in a noun phrase;
# pred: adjectives said of it with "is"; tags: what verbs and places it goes
# with. Persons also take every adjective in PERSON_PRED.
# ============================================================================

class Noun:
    def __init__(self, en, fr, g, en_pl=None, fr_pl=None, attr="", pred="", tags=""):
        self.en, self.fr, self.g = en, fr, g
        self.en_pl = en_pl or en + "s"
        self.fr_pl = fr_pl or fr + "s"
        self.attr = attr.split()
        self.pred = pred.split()
        self.tags = set(tags.split())
        self.mass = "mass" in self.tags


NOUNS = [
    # animals
    Noun("dog", "chien", "m", attr="black white small big old", pred="black white small big old tired sick calm",
         tags="animal pet wash loc_animal"),
    Noun("cat", "chat", "m", attr="black white gray small big old", pred="black white gray small big old tired sick calm",
         tags="animal pet loc_animal loc_small_animal"),
    Noun("bird", "oiseau", "m", fr_pl="oiseaux", attr="blue yellow red black small beautiful",
         pred="blue yellow red black small beautiful", tags="animal pet loc_animal loc_small_animal"),
    Noun("horse", "cheval", "m", fr_pl="chevaux", attr="black white gray big old beautiful",
         pred="black white gray big old beautiful tired", tags="animal pet"),
    Noun("fish", "poisson", "m", en_pl="fish", attr="red yellow small big", pred="red yellow small big",
         tags="animal pet one"),     # one: "the fish" would be singular or plural
    Noun("mouse", "souris", "f", en_pl="mice", fr_pl="souris", attr="gray white small", pred="gray white small",
         tags="animal pet loc_animal loc_small_animal"),
    # persons
    Noun("boy", "garçon", "m", attr="small young", tags="person"),
    Noun("girl", "fille", "f", attr="small young", tags="person"),
    Noun("man", "homme", "m", en_pl="men", attr="old young", tags="person"),
    Noun("woman", "femme", "f", en_pl="women", attr="old young beautiful", tags="person"),
    Noun("child", "enfant", "m", en_pl="children", attr="small", tags="person poss sibling"),
    Noun("teacher", "professeur", "m", attr="new old young", tags="person poss call"),
    Noun("doctor", "médecin", "m", attr="new old young", tags="person poss call"),
    Noun("friend", "ami", "m", attr="new old good", tags="person kin call sibling"),
    Noun("brother", "frère", "m", tags="person kin call sibling"),
    Noun("sister", "sœur", "f", tags="person kin call sibling"),
    Noun("mother", "mère", "f", tags="person kin call one"),
    Noun("father", "père", "m", tags="person kin call one"),
    Noun("student", "étudiant", "m", attr="new young", tags="person"),
    Noun("neighbor", "voisin", "m", attr="new old young", tags="person poss call"),
    # things
    Noun("car", "voiture", "f", attr="red black white blue green gray small big new old beautiful expensive",
         pred="red black white blue green gray small big old beautiful expensive dirty clean",
         tags="thing have buy wash like"),
    Noun("house", "maison", "f", attr="red white blue yellow small big new old beautiful",
         pred="white blue small big old beautiful expensive clean", tags="thing have buy like"),
    Noun("book", "livre", "m", attr="red blue green black small big new old good heavy",
         pred="red blue green small big old heavy expensive good",
         tags="thing have buy read write lose take open close loc_small like"),
    Noun("table", "table", "f", attr="white black small big old new", pred="white black small big old heavy clean dirty",
         tags="thing buy wash"),
    Noun("chair", "chaise", "f", attr="red white blue green small old new", pred="red white blue green small old",
         tags="thing buy"),
    Noun("door", "porte", "f", attr="red green blue white", pred="red green blue white open closed",
         tags="thing open close"),
    Noun("window", "fenêtre", "f", attr="small big", pred="open closed dirty clean small big",
         tags="thing open close wash"),
    Noun("key", "clé", "f", attr="small", pred="small", tags="thing have lose take loc_small"),
    Noun("phone", "téléphone", "m", attr="black white red new old", pred="black white red old expensive",
         tags="thing have buy lose take loc_small"),
    Noun("bag", "sac", "m", attr="black red blue small big new old heavy",
         pred="black red blue small big heavy empty open", tags="thing have buy lose take open close loc_small"),
    Noun("hat", "chapeau", "m", fr_pl="chapeaux", attr="black red green small big new old beautiful",
         pred="black red green small big old beautiful", tags="thing have buy lose take loc_small like"),
    Noun("shirt", "chemise", "f", attr="white blue red green new clean dirty", pred="white blue red green clean dirty",
         tags="thing buy wash like"),
    Noun("dress", "robe", "f", en_pl="dresses", attr="red white blue green yellow black new beautiful",
         pred="red white blue green yellow black beautiful expensive", tags="thing buy wash like"),
    Noun("ball", "balle", "f", attr="red blue yellow small big", pred="red blue yellow small big",
         tags="thing have buy lose take loc_small"),
    Noun("bike", "vélo", "m", attr="red blue green new old", pred="red blue green old dirty", tags="thing have buy wash like"),
    Noun("box", "boîte", "f", en_pl="boxes", attr="red blue black small big heavy empty",
         pred="red blue black small big heavy empty open closed", tags="thing buy open close take loc_small"),
    Noun("cup", "tasse", "f", attr="white blue small clean dirty", pred="white blue small empty clean dirty",
         tags="thing buy wash take loc_small"),
    Noun("pen", "stylo", "m", attr="red blue black new", pred="red blue black",
         tags="thing have buy lose take loc_small"),
    Noun("umbrella", "parapluie", "m", attr="black red yellow", pred="black red yellow",
         tags="thing have buy lose take loc_small like"),
    Noun("letter", "lettre", "f", tags="thing read write open loc_small"),
    Noun("newspaper", "journal", "m", fr_pl="journaux", tags="thing read buy"),
    Noun("flower", "fleur", "f", attr="red yellow white blue beautiful", pred="red yellow white blue beautiful",
         tags="thing buy like"),
    # food you can count
    Noun("apple", "pomme", "f", attr="red green big small", pred="red green big small",
         tags="food have buy take loc_small"),
    Noun("egg", "œuf", "m", pred="fresh", tags="food buy"),
    Noun("cake", "gâteau", "m", fr_pl="gâteaux", attr="big small good beautiful", pred="good big small",
         tags="food buy"),
    Noun("banana", "banane", "f", attr="yellow green", pred="yellow green", tags="food buy"),
    Noun("movie", "film", "m", attr="good new old", pred="good old", tags="movie"),
    # mass nouns: du pain, de la soupe, de l'eau; pas de pain
    Noun("water", "eau", "f", pred="cold hot", tags="mass drink buy"),
    Noun("milk", "lait", "m", pred="cold hot fresh", tags="mass drink buy poss"),
    Noun("coffee", "café", "m", pred="cold hot good", tags="mass drink buy poss"),
    Noun("tea", "thé", "m", pred="cold hot good", tags="mass drink buy poss"),
    Noun("wine", "vin", "m", attr="red white good", pred="good", tags="mass drink buy"),
    Noun("juice", "jus", "m", fr_pl="jus", pred="cold fresh good", tags="mass drink buy poss"),
    Noun("bread", "pain", "m", attr="good", pred="fresh good", tags="mass meal buy"),
    Noun("rice", "riz", "m", fr_pl="riz", pred="cold hot good", tags="mass meal buy"),
    Noun("cheese", "fromage", "m", attr="good", pred="good", tags="mass meal buy"),
    Noun("soup", "soupe", "f", attr="good", pred="cold hot good", tags="mass meal buy poss"),
    Noun("meat", "viande", "f", attr="good", pred="cold hot fresh good", tags="mass meal buy"),
]
NOUN = {n.en: n for n in NOUNS}
# places, for "X is in/on/under/behind/in front of the Y" (subject kinds allowed)
PLACE_NOUNS = [
    Noun("garden", "jardin", "m"), Noun("kitchen", "cuisine", "f"), Noun("bedroom", "chambre", "f"),
    Noun("park", "parc", "m"), Noun("bed", "lit", "m"), Noun("tree", "arbre", "m"),
]
for _n in PLACE_NOUNS:
    NOUN[_n.en] = _n
PREP = {"in": "dans", "on": "sur", "under": "sous", "behind": "derrière", "in front of": "devant"}
PLACES = [  # (place, preposition, kinds of subject)
    ("house", "in", "person animal"), ("house", "behind", "person animal"),
    ("house", "in front of", "person animal"),
    ("garden", "in", "person animal"), ("kitchen", "in", "person animal small"),
    ("bedroom", "in", "person animal small"), ("park", "in", "person animal"),
    ("car", "in", "person animal small"), ("car", "behind", "person animal"),
    ("car", "under", "small_animal"), ("car", "in front of", "person animal"),
    ("box", "in", "small small_animal"), ("bag", "in", "small"),
    ("table", "on", "small small_animal"), ("table", "under", "animal small"),
    ("bed", "on", "small small_animal"), ("bed", "under", "animal small"),
    ("chair", "on", "small small_animal"), ("chair", "under", "animal small"),
    ("tree", "under", "person animal"), ("tree", "behind", "person animal"),
    ("door", "behind", "person animal small"), ("door", "in front of", "person animal"),
]

EN_POSS = ["my", "your", "his", "her", "our", "their"]
FR_POSS = {"my": ("mon", "ma", "mes"), "your": ("ton", "ta", "tes"), "his": ("son", "sa", "ses"),
           "her": ("son", "sa", "ses"), "our": ("notre", "notre", "nos"), "their": ("leur", "leur", "leurs")}
NUMBERS = {"two": "deux", "three": "trois", "four": "quatre", "five": "cinq"}


def noun_phrase(n, det, pl=False, adj=None, neg=False):
    """English and French tokens of a noun phrase.

    det: "indef" (a cat / cats / bread  ->  un chat / des chats / du pain),
         "the", "generic" (cats / coffee -> les chats / le café, after like),
         a possessive (my ... their) or a number (two ... five).
    neg: the phrase is the object of a negated verb, so un/une/des/du become de.
    """
    if "one" in n.tags:                              # never plural: mother, father, fish
        pl = False
        det = "the" if det in NUMBERS else det
    if det in NUMBERS:
        pl = True
    if n.mass:
        pl = False
    g = n.g
    # English: determiner, adjective, noun
    en = []
    if det == "the":
        en.append("the")
    elif det == "indef" and not pl and not n.mass:
        en.append("a")
    elif det in EN_POSS or det in NUMBERS:
        en.append(det)
    if adj:
        en.append(adj.en)
    en.append(n.en_pl if pl else n.en)
    # French: determiner, [adjective], noun, [adjective]
    noun = n.fr_pl if pl else n.fr
    a = adj.fr(g, pl, noun) if adj else None
    first = a if adj and adj.pre else noun           # the word right after the determiner
    if det == "indef":
        if neg:
            d = ["de"]
        elif n.mass:
            d = ["du"] if g == "m" and not fr_vowel(first) else ["de", "le" if g == "m" else "la"]
        elif pl:
            d = ["de"] if adj and adj.pre else ["des"]   # de petits chats
        else:
            d = ["un" if g == "m" else "une"]
    elif det in ("the", "generic"):
        d = ["les" if pl else ("le" if g == "m" else "la")]
    elif det in EN_POSS:
        m, f, p = FR_POSS[det]
        d = [p if pl else (m if g == "m" else f)]
    else:
        d = [NUMBERS[det]]
    if adj and adj.pre:
        fr = d + [a, noun]
    elif adj:
        fr = d + [noun, a]
    else:
        fr = d + [noun]
    return en, fr


# ============================================================================
# Subjects and object pronouns
# ============================================================================

class Subject:
    """en/fr: the subject's words; p: person 0..5; be/be_not: English with the verb."""
    def __init__(self, en, fr, p, g, pl, be, be_not, third):
        self.en, self.fr, self.p, self.g, self.pl = en, fr, p, g, pl
        self.be, self.be_not, self.third = be, be_not, third


PRONOUNS = [
    Subject(["I"], ["je"], 0, "m", False, ["I'm"], ["I'm", "not"], False),
    Subject(["you"], ["tu"], 1, "m", False, ["you're"], ["you", "aren't"], False),
    Subject(["he"], ["il"], 2, "m", False, ["he's"], ["he", "isn't"], True),
    Subject(["she"], ["elle"], 2, "f", False, ["she's"], ["she", "isn't"], True),
    Subject(["we"], ["nous"], 3, "m", True, ["we're"], ["we", "aren't"], False),
    Subject(["they"], ["ils"], 5, "m", True, ["they're"], ["they", "aren't"], False),
]
# inverted questions: Are you ...? Es-tu ...?  Is he hungry? A-t-il faim ?
BE_Q = {"you": ("Are you", "es-tu"), "he": ("Is he", "est-il"), "she": ("Is she", "est-elle"),
        "we": ("Are we", "sommes-nous"), "they": ("Are they", "sont-ils")}
HAVE_Q = {"you": "as-tu", "he": "a-t-il", "she": "a-t-elle", "we": "avons-nous", "they": "ont-ils"}


def noun_subject(n, det, pl, adj=None):
    en, fr = noun_phrase(n, det, pl, adj)
    pl = pl and not n.mass and "one" not in n.tags
    be = "are" if pl else "is"
    return Subject(en, fr, 5 if pl else 2, n.g, pl, en + [be], en + [be + "n't"], not pl)


class ObjPronoun:
    def __init__(self, en, fr, imp, p, g, pl):
        self.en, self.fr, self.imp, self.p, self.g, self.pl = en, fr, imp, p, g, pl


OBJ_PRONOUNS = [
    ObjPronoun("me", "me", "moi", 0, "m", False),
    ObjPronoun("you", "te", None, 1, "m", False),
    ObjPronoun("him", "le", "le", 2, "m", False),
    ObjPronoun("her", "la", "la", 2, "f", False),
    ObjPronoun("us", "nous", "nous", 3, "m", True),
    ObjPronoun("them", "les", "les", 5, "m", True),
]


def clash(subj, obj):
    """I see me, we see us, you see you: reflexive, not written here."""
    return {subj.p, obj.p} <= {0, 3} or subj.p == obj.p == 1


# ============================================================================
# Clauses: English and French verb groups for four tenses
#   pres  I eat.         Je mange.
#   neg   I don't eat.   Je ne mange pas.
#   past  I ate.         J'ai mangé.
#   pneg  I didn't eat.  Je n'ai pas mangé.
# ============================================================================

def en_clause(subj, v, tense):
    if tense == "pres":
        return subj.en + [v.s if subj.third else v.base]
    if tense == "neg":
        return subj.en + ["doesn't" if subj.third else "don't", v.base]
    if tense == "past":
        return subj.en + [v.past]
    return subj.en + ["didn't", v.base]


def fr_clause(subj, v, tense, pron=None, mid=None):
    """subject [ne] [pronoun] verb [pas]; in the past the participle agrees with
    the subject after être and with a preceding object pronoun after avoir;
    mid is an adverb between auxiliary and participle (J'ai bien dormi)."""
    neg = tense in ("neg", "pneg")
    out = list(subj.fr) + (["ne"] if neg else []) + ([pron.fr] if pron else [])
    if tense in ("pres", "neg"):
        return out + [v.pres[subj.p]] + (["pas"] if neg else [])
    aux = (ETRE if v.aux == "être" else AVOIR)[subj.p]
    if v.aux == "être":
        pp = agree(v.pp, subj.g, subj.pl)
    elif pron:
        pp = agree(v.pp, pron.g, pron.pl)
    else:
        pp = v.pp
    return out + [aux] + (["pas"] if neg else []) + ([mid] if mid else []) + [pp]


# adverbs: French word, where it goes in the passé composé, which tenses
ADVERBS = {
    "a lot": ("beaucoup", "mid", "pres neg past pneg"),
    "well": ("bien", "mid", "pres neg past pneg"),
    "here": ("ici", "end", "pres neg past pneg"),
    "every day": ("tous les jours", "end", "pres neg"),
    "today": ("aujourd'hui", "end", "pres neg past pneg"),
    "yesterday": ("hier", "end", "past pneg"),
}
# intransitive verbs: subjects ("person" or the animals named) and adverbs they take
INTRANS = {
    "eat": ("person dog cat horse bird mouse fish", "a lot|well|here|today|yesterday"),
    "sleep": ("person dog cat horse bird", "a lot|well|here|today|yesterday"),
    "run": ("person dog cat horse mouse", "a lot|every day|today|yesterday"),
    "swim": ("person dog fish", "a lot|well|every day|here|today|yesterday"),
    "sing": ("person", "a lot|well|every day|here|today|yesterday"),
    "dance": ("person", "a lot|well|here|today|yesterday"),
    "work": ("person", "a lot|well|here|every day|today|yesterday"),
    "read": ("person", "a lot|every day|here|today|yesterday"),
    "write": ("person", "a lot|well|every day|today|yesterday"),
    "laugh": ("person", "a lot"),
    "cry": ("person", "a lot|yesterday"),
    "wait": ("person dog", "here|yesterday"),
    "win": ("person", "yesterday"),
    "lose": ("person", "yesterday"),
    "play": ("person dog cat", "a lot|well|here|every day|today|yesterday"),
    "leave": ("person dog cat bird", "today|yesterday"),
    "come": ("person dog cat", "here|every day|today|yesterday"),
    "fall": ("person", ""),
    "stay": ("person dog cat", "here|today|yesterday"),
}
TENSES = ["pres", "neg", "past", "pneg"]


def ambiguous(subj, v, tense):
    """They read. is present and past: leave the past out where it reads like the present."""
    return tense == "past" and v.past == v.base and not subj.third


def nouns_with(tag):
    return [n for n in NOUNS if tag in n.tags]


PERSONS = nouns_with("person")


def pick_det(r, n, allow=("indef", "the", "poss")):
    """A determiner for a noun. Kin (my brother) take a possessive; other
    persons take none (the man, not his man)."""
    if "kin" in n.tags and "poss" in allow:
        return r.choice(EN_POSS)
    d = r.choice(allow)
    if d == "poss" and "person" in n.tags and "poss" not in n.tags:
        d = "the"
    return r.choice(EN_POSS) if d == "poss" else d


def pick_adj(r, n, p=0.35):
    """Sometimes an adjective; those that follow the noun (colours) twice as often."""
    if not n.attr or r.random() >= p:
        return None
    return ADJ[r.choice(n.attr + [a for a in n.attr if not ADJ[a].pre])]


def random_subject(r, kinds="person", p_pronoun=0.6):
    """A pronoun or a noun phrase; kinds: "person" and/or the animals allowed."""
    kinds = kinds.split()
    if "person" in kinds and r.random() < p_pronoun:
        return r.choice(PRONOUNS)
    pool = (PERSONS if "person" in kinds else []) + [NOUN[k] for k in kinds if k != "person"]
    n = r.choice(pool)
    return noun_subject(n, pick_det(r, n, ("the", "poss")), r.random() < 0.3)


# ============================================================================
# Templates. Each returns (english, french) or None.
# ============================================================================

def t_be_adj(r):
    """I'm tired. / She isn't ready. / Are you busy? / The car is red. / The apples aren't green."""
    if r.random() < 0.45:
        s = r.choice(PRONOUNS)
        adj = ADJ[r.choice(PERSON_PRED)]
    else:
        n = r.choice([n for n in NOUNS if n.pred or "person" in n.tags])
        adj = ADJ[r.choice(n.pred or PERSON_PRED)]
        s = noun_subject(n, pick_det(r, n, ("the", "poss")), r.random() < 0.3)
    neg = r.random() < 0.35
    very = adj.en not in NO_VERY and r.random() < 0.2
    a = adj.fr(s.g, s.pl)
    if s.en[0] in BE_Q and not neg and r.random() < 0.15:
        en_q, fr_q = BE_Q[s.en[0]]
        return (english([en_q] + (["very"] if very else []) + [adj.en], "?"),
                french([fr_q] + (["très"] if very else []) + [a], "?"))
    en = (s.be_not if neg else s.be) + (["very"] if very else []) + [adj.en]
    fr = s.fr + (["ne"] if neg else []) + [ETRE[s.p]] + (["pas"] if neg else []) + (["très"] if very else []) + [a]
    return english(en), french(fr)


IDIOMS = {"hungry": "faim", "thirsty": "soif", "cold": "froid", "hot": "chaud", "sleepy": "sommeil",
          "afraid": "peur", "right": "raison", "wrong": "tort"}


def t_avoir(r):
    """English be + adjective, French avoir + noun: I'm hungry. J'ai faim. A-t-il peur ?"""
    word = r.choice(sorted(IDIOMS))
    s = random_subject(r, "person" if word in ("right", "wrong") else "person dog cat horse bird mouse")
    neg = r.random() < 0.35
    very = word not in ("right", "wrong") and r.random() < 0.2
    if s.en[0] in HAVE_Q and not neg and r.random() < 0.15:
        return (english([BE_Q[s.en[0]][0]] + (["very"] if very else []) + [word], "?"),
                french([HAVE_Q[s.en[0]]] + (["très"] if very else []) + [IDIOMS[word]], "?"))
    en = (s.be_not if neg else s.be) + (["very"] if very else []) + [word]
    fr = s.fr + (["ne"] if neg else []) + [AVOIR[s.p]] + (["pas"] if neg else []) + (["très"] if very else []) + [IDIOMS[word]]
    return english(en), french(fr)


def t_intrans(r):
    """I eat. He doesn't sleep. We worked a lot. She left yesterday. (Elle est partie hier.)"""
    key = r.choice(sorted(INTRANS))
    v = VERBS[key]
    kinds, advs = INTRANS[key]
    s = random_subject(r, kinds)
    tense = r.choice(TENSES[2:] if key == "fall" else TENSES)     # He fell. Il est tombé.
    if ambiguous(s, v, tense):
        return None
    adv = None
    options = [a for a in advs.split("|") if a and tense in ADVERBS[a][2].split()]
    if options and r.random() < 0.4:
        adv = r.choice(options)
    past = tense in ("past", "pneg")
    mid = ADVERBS[adv][0] if adv and past and ADVERBS[adv][1] == "mid" else None
    en = en_clause(s, v, tense) + ([adv] if adv else [])
    fr = fr_clause(s, v, tense, mid=mid) + ([ADVERBS[adv][0]] if adv and not mid else [])
    return english(en), french(fr)


# transitive verbs with a noun object: object pools (tag, determiner style), tenses
TRANS = {
    "see":   (["animal:count", "person:person", "thing:count", "movie:count"], TENSES),
    "have":  (["pet:count", "sibling:kin", "have:count", "food:count"], ["pres", "neg"]),
    "want":  (["buy:count", "food:count", "mass:mass", "pet:count"], ["pres", "neg"]),
    "like":  (["animal:generic", "food:generic", "mass:generic", "movie:specific", "like:generic"], ["pres", "neg"]),
    "eat":   (["food:count", "meal:mass"], TENSES),
    "drink": (["drink:mass"], TENSES),
    "buy":   (["buy:count", "food:count", "mass:mass"], TENSES),
    "find":  (["lose:specific", "pet:specific"], ["past", "pneg"]),
    "lose":  (["lose:specific"], ["past", "pneg"]),
    "read":  (["read:count"], TENSES),
    "write": (["write:count"], TENSES),
    "open":  (["open:specific"], TENSES),
    "close": (["close:specific"], TENSES),
    "take":  (["take:specific"], TENSES),
    "wash":  (["wash:specific"], TENSES),
    "know":  (["person:person"], ["pres", "neg"]),
    "help":  (["person:person"], TENSES),
    "call":  (["call:person"], TENSES),
    "watch": (["movie:count", "animal:specific", "person:specific"], TENSES),
}
QUESTION_VERBS = ["have", "want", "like", "see", "drink", "know", "read"]   # Do you ...? -> Aimes-tu ... ?


def pick_object(r, verb, neg, imperative=False, noun=None, adj=None):
    """The object of a transitive verb: a noun from one of the verb's pools, with
    a determiner in that pool's style. noun/adj: use this noun and adjective."""
    pools = [p for p in TRANS[verb][0] if noun is None or p.split(":")[0] in noun.tags]
    tag, style = r.choice(pools).split(":")
    n = noun or r.choice(nouns_with(tag))
    if imperative and style in ("count", "person") and verb not in ("buy", "eat", "take"):
        style = "specific"                          # Open the door. Call your mother.
    if n.mass and style != "generic":
        style = "mass"                              # buy bread, not five bread
    if style == "count":
        det = pick_det(r, n, ("indef", "indef", "the", "poss", "indef_pl", "the_pl", "num"))
    elif style == "mass":                           # drink coffee / the coffee / your coffee
        det = r.choice(["indef", "indef", "indef", "the", "poss"])
        if det == "poss":
            det = r.choice(EN_POSS) if "poss" in n.tags else "the"
    elif style == "generic":                        # I like cats, the red car, your dress
        det = "generic" if r.random() < 0.6 or n.mass else pick_det(r, n, ("the", "poss"))
    elif style == "specific":
        det = pick_det(r, n, ("the", "poss", "the_pl"))
    elif style == "kin":                            # I have a brother, two sisters
        det = r.choice(["indef", "indef", "num"])
    else:                                           # person: I know a doctor; not: I don't know a doctor
        det = pick_det(r, n, ("the", "poss") if neg else ("indef", "the", "poss"))
    pl = False
    if det in ("indef_pl", "the_pl"):
        det, pl = det[:-3], True
    elif det == "num":
        det = r.choice(sorted(NUMBERS)) if verb in ("have", "want", "buy", "see", "eat", "take") else "indef"
    elif det == "generic":
        pl = not n.mass
    if n.mass:
        pl = False
    return noun_phrase(n, det, pl, adj or pick_adj(r, n), neg=neg)


def t_trans(r):
    """I see the black cat. I don't have a car. (Je n'ai pas de voiture.) Do you like cats?"""
    verb = r.choice(sorted(TRANS))
    v = VERBS[verb]
    if verb in QUESTION_VERBS and r.random() < 0.12:
        en_np, fr_np = pick_object(r, verb, False)
        return (english(["do", "you", v.base] + en_np, "?"),
                french([v.pres[1] + "-tu"] + fr_np, "?"))
    s = random_subject(r, "person", 0.7)
    tense = r.choice(TRANS[verb][1])
    if ambiguous(s, v, tense):
        return None
    neg = tense in ("neg", "pneg")
    en_np, fr_np = pick_object(r, verb, neg)
    if en_np[-1] == s.en[-1]:                      # The men don't watch the men.
        return None
    adv = None
    if verb not in ("have", "want", "like", "know") and r.random() < 0.1:
        adv = r.choice(["today", "yesterday"] if tense in ("past", "pneg") else ["today", "every day"])
    en = en_clause(s, v, tense) + en_np + ([adv] if adv else [])
    fr = fr_clause(s, v, tense) + fr_np + ([ADVERBS[adv][0]] if adv else [])
    return english(en), french(fr)


PRONOUN_VERBS = {"see": TENSES, "know": ["pres", "neg"], "love": ["pres", "neg"], "help": TENSES,
                 "watch": TENSES, "find": ["past", "pneg"]}


def t_pronoun(r):
    """I see him. Je le vois.  I didn't see her. Je ne l'ai pas vue."""
    verb = r.choice(sorted(PRONOUN_VERBS))
    v = VERBS[verb]
    s = random_subject(r, "person", 0.8)
    o = r.choice(OBJ_PRONOUNS)
    if clash(s, o):
        return None
    tense = r.choice(PRONOUN_VERBS[verb])
    return english(en_clause(s, v, tense) + [o.en]), french(fr_clause(s, v, tense, pron=o))


def t_modal(r):
    """I want to sleep. Je veux dormir.  He can't find his keys.  I don't want to see her. Je ne veux pas la voir."""
    modal = r.choice(["want", "can"])
    s = random_subject(r, "person", 0.7)
    neg = r.random() < 0.4
    kind = r.random()
    if kind < 0.35:
        verb = r.choice(sorted(INTRANS))
        if verb in ("cry", "fall"):
            return None
        en_rest, fr_rest = [], []
    elif kind < 0.7:
        verb = r.choice(sorted(TRANS))
        if verb in ("have", "want", "like", "know", "lose"):
            return None
        en_rest, fr_rest = pick_object(r, verb, neg)
    else:
        verb = r.choice(sorted(PRONOUN_VERBS))
        o = r.choice(OBJ_PRONOUNS)
        if clash(s, o) or verb in ("know", "love"):
            return None
        en_rest, fr_rest = [o.en], []
    v = VERBS[verb]
    if modal == "want":
        if neg:
            en = s.en + ["doesn't" if s.third else "don't", "want", "to", v.base]
        else:
            en = s.en + ["wants" if s.third else "want", "to", v.base]
        m = VOULOIR[s.p]
    else:
        en = s.en + ["can't" if neg else "can", v.base]
        m = POUVOIR[s.p]
    fr = s.fr + (["ne", m, "pas"] if neg else [m])
    fr += ([o.fr] if kind >= 0.7 else []) + [v.inf] + fr_rest
    return english(en + en_rest), french(fr)


SMALL = nouns_with("loc_small")
SMALL_ANIMALS = nouns_with("loc_small_animal")


def t_location(r):
    """The cat is under the table. Le chat est sous la table.  Where are my keys? Où sont mes clés ?"""
    place, prep, kinds = r.choice(PLACES)
    kind = r.choice(kinds.split())
    if kind == "person":
        s = random_subject(r, "person", 0.5)
    else:
        n = r.choice({"animal": nouns_with("loc_animal"), "small_animal": SMALL_ANIMALS, "small": SMALL}[kind])
        s = noun_subject(n, pick_det(r, n, ("the", "poss")), r.random() < 0.2)
    pn = NOUN[place]
    det = "the" if r.random() < 0.75 or place in ("park", "tree") else r.choice(EN_POSS)
    en_p, fr_p = noun_phrase(pn, det)
    if r.random() < 0.15 and s.en[0] != "I":
        if s.en[0] in BE_Q:
            q = {"you": "es-tu", "he": "est-il", "she": "est-elle", "we": "sommes-nous", "they": "sont-ils"}[s.en[0]]
            return english(["where", "are" if s.en[0] in ("you", "we", "they") else "is"] + s.en, "?"), french(["où", q], "?")
        return (english(["where", "are" if s.pl else "is"] + s.en, "?"),
                french(["où", "sont" if s.pl else "est"] + s.fr, "?"))
    neg = r.random() < 0.3
    en = (s.be_not if neg else s.be) + [prep] + en_p
    fr = s.fr + (["ne"] if neg else []) + [ETRE[s.p]] + (["pas"] if neg else []) + [PREP[prep]] + fr_p
    return english(en), french(fr)


def t_cest(r):
    """It's a red car. C'est une voiture rouge.  These aren't my keys. Ce ne sont pas mes clés."""
    n = r.choice([n for n in NOUNS if not n.mass])
    pl = r.random() < 0.25 and "one" not in n.tags
    det = pick_det(r, n, ("indef", "indef", "the", "poss"))
    en_np, fr_np = noun_phrase(n, det, pl, pick_adj(r, n, 0.45))
    neg = r.random() < 0.3
    if not pl and not neg and r.random() < 0.15:
        return english(["is", "it"] + en_np, "?"), french(["est-ce"] + fr_np, "?")
    if pl:
        en = ["these", "aren't" if neg else "are"] + en_np
        fr = ["ce", "ne", "sont", "pas"] + fr_np if neg else ["ce", "sont"] + fr_np
    else:
        en = ["it", "isn't"] + en_np if neg else ["it's"] + en_np
        fr = ["ce", "ne", "est", "pas"] + fr_np if neg else ["ce", "est"] + fr_np
    return english(en), french(fr)


IMP_INTRANS = {"sleep": "well", "run": "", "sing": "", "dance": "", "wait": "here", "eat": "", "read": "",
               "write": "", "come": "here", "stay": "here", "leave": "", "laugh": "",
               "cry": "", "fall": "", "swim": "", "play": "here", "work": ""}
IMP_NEG_ONLY = {"leave", "laugh", "cry", "fall"}
IMP_POS_ONLY = {"come", "sleep"}
IMP_TRANS = ["open", "close", "take", "eat", "drink", "wash", "read", "buy", "call", "help", "watch"]
# verbs with an object pronoun in the imperative, and their English preposition (wait for me)
IMP_PRONOUN = {"help": "", "call": "", "watch": "", "wait": "for"}


def t_imperative(r):
    """Open the door. Ouvre la porte.  Don't buy bread. N'achète pas de pain.  Call him. Appelle-le.  Don't call him. Ne l'appelle pas."""
    neg = r.random() < 0.4
    end = "!" if r.random() < 0.25 else "."
    kind = r.random()
    if kind < 0.3:
        verb = r.choice(sorted(IMP_INTRANS))
        if (neg and verb in IMP_POS_ONLY) or (not neg and verb in IMP_NEG_ONLY):
            return None
        v = VERBS[verb]
        adv = IMP_INTRANS[verb] if IMP_INTRANS[verb] and r.random() < 0.5 else None
        en = (["don't"] if neg else []) + [v.base] + ([adv] if adv else [])
        fr = (["ne", v.imperative(), "pas"] if neg else [v.imperative()]) + ([ADVERBS[adv][0]] if adv else [])
    elif kind < 0.75:
        verb = r.choice(IMP_TRANS)
        v = VERBS[verb]
        en_np, fr_np = pick_object(r, verb, neg, imperative=True)
        en = (["don't"] if neg else []) + [v.base] + en_np
        fr = (["ne", v.imperative(), "pas"] if neg else [v.imperative()]) + fr_np
    else:
        verb = r.choice(sorted(IMP_PRONOUN))
        v = VERBS[verb]
        o = r.choice([o for o in OBJ_PRONOUNS if o.imp])
        en = (["don't"] if neg else []) + [v.base] + ([IMP_PRONOUN[verb]] if IMP_PRONOUN[verb] else []) + [o.en]
        fr = ["ne", o.fr, v.imperative(), "pas"] if neg else [v.imperative() + "-" + o.imp]
    return english(en, end), french(fr, end)


COLOURS = ["red", "black", "white", "blue", "green", "yellow", "gray"]
COLOUR_VERBS = ["see", "have", "want", "like", "buy", "wash", "take", "find", "lose", "open", "watch"]


def t_colour(r):
    """The adjective after the noun: I have a red car. J'ai une voiture rouge.
    The black cat sleeps. Le chat noir dort.  The white box is heavy. La boîte blanche est lourde."""
    n = r.choice([n for n in NOUNS if any(a in COLOURS for a in n.attr)])
    adj = ADJ[r.choice([a for a in n.attr if not ADJ[a].pre])]
    if r.random() < 0.5:                           # as the object
        verb = r.choice([v for v in COLOUR_VERBS if any(p.split(":")[0] in n.tags for p in TRANS[v][0])])
        v = VERBS[verb]
        s = random_subject(r, "person", 0.8)
        tense = r.choice(TRANS[verb][1])
        en_np, fr_np = pick_object(r, verb, tense in ("neg", "pneg"), noun=n, adj=adj)
        return english(en_clause(s, v, tense) + en_np), french(fr_clause(s, v, tense) + fr_np)
    s = noun_subject(n, pick_det(r, n, ("the", "the", "poss")), r.random() < 0.3, adj)
    verbs = [k for k, (kinds, _) in sorted(INTRANS.items()) if n.en in kinds.split()]
    if verbs and r.random() < 0.5:                 # as the subject of a verb
        v = VERBS[r.choice(verbs)]
        tense = r.choice(TENSES)
        return english(en_clause(s, v, tense)), french(fr_clause(s, v, tense))
    preds = [a for a in n.pred if a not in COLOURS]   # as the subject of an adjective
    if not preds:
        return None
    a = ADJ[r.choice(preds)]
    neg = r.random() < 0.3
    en = (s.be_not if neg else s.be) + [a.en]
    fr = s.fr + (["ne"] if neg else []) + [ETRE[s.p]] + (["pas"] if neg else []) + [a.fr(s.g, s.pl)]
    return english(en), french(fr)


TEMPLATES = [  # (name, function, train count, test count)
    ("be_adj", t_be_adj, 220, 14),
    ("avoir", t_avoir, 55, 4),
    ("intrans", t_intrans, 210, 13),
    ("trans", t_trans, 300, 20),
    ("colour", t_colour, 150, 10),
    ("pronoun", t_pronoun, 150, 12),
    ("modal", t_modal, 110, 8),
    ("location", t_location, 110, 9),
    ("cest", t_cest, 70, 5),
    ("imperative", t_imperative, 90, 5),
]


# ============================================================================
# Hand-written pairs, short and idiomatic like the start of d2l's file.
# " !" and " ?" become U+202F before the mark on the French side.
# ============================================================================

HAND = """\
Go.	Va !
Hi.	Salut !
Run!	Cours !
Who?	Qui ?
Wow!	Ça alors !
Fire!	Au feu !
Help!	À l'aide !
Jump.	Saute.
Stop!	Arrête !
Wait!	Attends !
Hello!	Bonjour !
Thanks!	Merci !
Yes.	Oui.
No.	Non.
Get out!	Sors !
Come in.	Entre.
Sit down.	Assieds-toi.
Get up.	Lève-toi.
Hurry up!	Dépêche-toi !
Calm down.	Calme-toi.
Be quiet.	Tais-toi.
Be careful.	Sois prudent.
Be nice.	Sois gentil.
Good night.	Bonne nuit.
Good luck!	Bonne chance !
Good job!	Bon travail !
Cheers!	Santé !
Welcome.	Bienvenue.
Goodbye.	Au revoir.
See you tomorrow.	À demain.
Excuse me.	Excuse-moi.
Me too.	Moi aussi.
Not me.	Pas moi.
Really?	Vraiment ?
Why not?	Pourquoi pas ?
Of course.	Bien sûr.
Of course not.	Bien sûr que non.
No problem.	Pas de problème.
No, thanks.	Non, merci.
Yes, of course.	Oui, bien sûr.
Thank you very much.	Merci beaucoup.
Happy birthday!	Joyeux anniversaire !
Who knows?	Qui sait ?
Who are you?	Qui es-tu ?
Who won?	Qui a gagné ?
Who came?	Qui est venu ?
What's this?	Qu'est-ce que c'est ?
How are you?	Comment vas-tu ?
I'm fine.	Je vais bien.
I'm fine, thanks.	Je vais bien, merci.
I'm OK.	Ça va.
It's late.	Il est tard.
It's cold.	Il fait froid.
It's hot.	Il fait chaud.
It's raining.	Il pleut.
It's me.	C'est moi.
It's him.	C'est lui.
It's true.	C'est vrai.
It's free.	C'est gratuit.
I agree.	Je suis d'accord.
I'm sorry.	Je suis désolé.
I'm sure.	Je suis sûr.
Are you sure?	Es-tu sûr ?
I'm lost.	Je suis perdu.
I see.	Je vois.
I know.	Je sais.
I don't know.	Je ne sais pas.
I understand.	Je comprends.
I don't understand.	Je ne comprends pas.
I forgot.	J'ai oublié.
I lost.	J'ai perdu.
I won!	J'ai gagné !
I tried.	J'ai essayé.
He's calm.	Il est calme.
I'm home.	Je suis chez moi.
I have a red car.	J'ai une voiture rouge.
I see the black cat.	Je vois le chat noir.
I don't eat.	Je ne mange pas.
I don't have a car.	Je n'ai pas de voiture.
I didn't see her.	Je ne l'ai pas vue.
I don't want to see her.	Je ne veux pas la voir.
Help me.	Aide-moi.
Call me.	Appelle-moi.
Wait for me.	Attends-moi.
He's home.	Il est chez lui.
She's home.	Elle est chez elle.
We're home.	Nous sommes chez nous.
They're home.	Ils sont chez eux.
I'm not home.	Je ne suis pas chez moi.
Are you home?	Es-tu chez toi ?
Go home.	Rentre chez toi.
I have to go.	Je dois partir.
I'm coming.	J'arrive.
Let's go!	Allons-y !
Let's eat.	Mangeons.
Let's dance.	Dansons.
Nobody came.	Personne n'est venu.
Everybody left.	Tout le monde est parti.
Leave me alone.	Laisse-moi tranquille.
Answer me.	Réponds-moi.
Don't move!	Ne bouge pas !
Don't worry.	Ne t'inquiète pas.
Try again.	Essaie encore.
Look!	Regarde !
I'm a teacher.	Je suis professeur.
I'm a student.	Je suis étudiant.
She's a doctor.	Elle est médecin.
"""


def hand_pairs():
    pairs = []
    for line in HAND.strip("\n").split("\n"):
        en, fr = line.split("\t")
        pairs.append((en, fr.replace(" !", NNBSP + "!").replace(" ?", NNBSP + "?")))
    return pairs


# ============================================================================
# Drawing the train and test splits
# ============================================================================

def draw(r, fn, count, accept, max_tries=200000):
    """Call a template until it has given `count` sentences that `accept` takes."""
    got = []
    for _ in range(max_tries):
        if len(got) == count:
            return got
        pair = fn(r)
        if pair is not None and accept(pair):
            got.append(pair)
    raise RuntimeError(f"{fn.__name__}: found only {len(got)} of {count} sentences")


def make_eng_fra(r):
    train, seen_en, seen_fr = [], set(), set()

    def fresh(pair):
        en, fr = pair
        if en in seen_en or fr in seen_fr:
            return False
        if not 2 <= n_words(en) <= MAX_WORDS or not 2 <= n_words(fr) <= MAX_WORDS:
            return False
        seen_en.add(en)
        seen_fr.add(fr)
        return True

    for en, fr in hand_pairs():
        assert en not in seen_en and fr not in seen_fr, (en, fr)
        seen_en.add(en)
        seen_fr.add(fr)
        train.append((en, fr))
    for name, fn, n_train, _ in TEMPLATES:
        train += draw(r, fn, n_train, fresh)

    en_count = Counter(t for en, _ in train for t in d2l_tokens(en))
    fr_count = Counter(t for _, fr in train for t in d2l_tokens(fr))

    # French has many rare forms (t'aident, vieilles, partons): add sentences
    # that use a word seen fewer than RARE times, until EXTRA more are in.
    def fresh_and_rare(pair):
        en, fr = pair
        if not any(en_count[t] < RARE for t in d2l_tokens(en)) and \
                not any(fr_count[t] < RARE for t in d2l_tokens(fr)):
            return False
        if not fresh(pair):
            return False
        en_count.update(d2l_tokens(en))
        fr_count.update(d2l_tokens(fr))
        return True

    def any_template(r):                     # a template, as often as in the quotas above
        x = r.random() * sum(n for _, _, n, _ in TEMPLATES)
        for _, fn, n, _ in TEMPLATES:
            if x < n:
                return fn(r)
            x -= n
        return None

    train += draw(r, any_template, EXTRA, fresh_and_rare)

    def fresh_and_known(pair):
        en, fr = pair
        if any(en_count[t] < 2 for t in d2l_tokens(en)) or any(fr_count[t] < 2 for t in d2l_tokens(fr)):
            return False
        return fresh(pair)

    test = []
    for name, fn, _, n_test in TEMPLATES:
        test += draw(r, fn, n_test, fresh_and_known)
    order = lambda p: (len(p[0]), p[0])     # like d2l's file: shortest English first
    return sorted(train, key=order), sorted(test, key=order)


# ============================================================================
# Sentiment: label 1 positive, 0 negative. Four kinds of sentence, which
# lesson 12 tells apart by their words (sent_kind) and scores one by one:
#   plain     one word carries the sentiment: "the movie was good" 1
#   negation  a negation (not, never, nobody) next to it flips it:
#             "the movie was not good" 0, "i did not hate the food" 1
#   far       the negation governs a that-clause, four or more words before
#             the sentiment word: "i do not think that the room was clean" 0
#   contrast  two clauses of opposite sentiment joined by "but"; the second
#             decides: "the food was good but the service was slow" 0
# In a contrast, both orders of the same two clauses are equally likely, so
# the words alone (a bag of words, an average of word vectors) cannot tell
# the label: "the food was bad but the staff was friendly" 1 has the words of
# "the staff was friendly but the food was bad" 0.
# ============================================================================

SENT_ITEMS = [  # (noun, domain, plural, takes my/our)
    ("movie", "film", False, False), ("film", "film", False, False), ("show", "film", False, False),
    ("story", "film", False, False), ("ending", "film", False, False), ("book", "film", False, True),
    ("song", "film", False, False), ("album", "film", False, False), ("actors", "film", True, False),
    ("concert", "film", False, False),
    ("food", "food", False, True), ("meal", "food", False, True), ("pizza", "food", False, True),
    ("soup", "food", False, True), ("pasta", "food", False, True), ("dessert", "food", False, True),
    ("coffee", "food", False, True), ("cake", "food", False, True), ("fries", "food", True, True),
    ("hotel", "place", False, True), ("room", "place", False, True), ("restaurant", "place", False, False),
    ("beach", "place", False, False), ("bed", "place", False, True),
    ("service", "service", False, False), ("staff", "service", False, False), ("waiter", "service", False, True),
    ("driver", "service", False, True), ("guide", "service", False, True),
    ("phone", "product", False, True), ("camera", "product", False, True), ("laptop", "product", False, True),
    ("headphones", "product", True, True), ("battery", "product", False, True),
    ("trip", "trip", False, True), ("flight", "trip", False, True), ("tour", "trip", False, True),
]
GENERAL_POS = ["good", "great", "excellent", "wonderful", "amazing", "perfect", "fantastic", "nice", "lovely"]
GENERAL_NEG = ["bad", "terrible", "awful", "horrible", "poor", "disappointing"]
DOMAIN_POS = {"film": ["funny", "interesting", "exciting", "beautiful"],
              "food": ["delicious", "tasty", "fresh"],
              "place": ["clean", "comfortable", "quiet", "beautiful"],
              "service": ["friendly", "helpful", "fast", "polite"],
              "product": ["reliable", "fast", "solid"],
              "trip": ["relaxing", "fun", "pleasant"]}
DOMAIN_NEG = {"film": ["boring", "dull", "stupid"],
              "food": ["bland", "cold", "salty", "stale"],
              "place": ["dirty", "noisy", "uncomfortable"],
              "service": ["rude", "slow", "unfriendly"],
              "product": ["broken", "slow", "useless"],
              "trip": ["exhausting", "stressful", "boring"]}
# negative words that read naturally after "not" and "never": not bad, never rude
NEGATABLE_NEG = {"bad", "terrible", "awful", "horrible", "disappointing", "boring", "dull", "bland", "cold",
                 "salty", "dirty", "noisy", "uncomfortable", "rude", "slow", "unfriendly", "stressful"}
# words too strong for "very": truly awful, so perfect, not very perfect
EXTREME = {"excellent", "wonderful", "amazing", "perfect", "fantastic", "terrible", "awful", "horrible", "useless"}


def intensifier(r, adj):
    return r.choice(["really", "truly", "so"] if adj in EXTREME else ["very", "really", "so", "truly"])


def sent_item(r, poss=True):
    """(words, domain, plural): the movie / this hotel / my phone / these headphones."""
    noun, domain, pl, takes_poss = r.choice(SENT_ITEMS)
    det = r.choice(["the", "the", "the", "this", "my", "our"] if poss and takes_poss else ["the", "the", "this"])
    if det == "this" and pl:
        det = "these"
    return [det, noun], domain, pl


def sent_adj(r, domain, want=None):
    pos = r.random() < 0.5 if want is None else want
    words = (GENERAL_POS + DOMAIN_POS[domain]) if pos else (GENERAL_NEG + DOMAIN_NEG[domain])
    return r.choice(words), pos


def s_be(r):
    """the food was delicious 1 / the room is very dirty 0 / the movie was not good 0 /
    the hotel was not bad at all 1 / the staff is never rude 1"""
    item, domain, pl = sent_item(r)
    adj, pos = sent_adj(r, domain)
    be = r.choice(["were", "are"] if pl else ["was", "is"])
    if r.random() < 0.5:
        return item + [be] + ([intensifier(r, adj)] if r.random() < 0.35 else []) + [adj], int(pos)
    if not pos and adj not in NEGATABLE_NEG:
        return None
    if r.random() < 0.15:                           # never: the staff is never rude, the food is never fresh
        if pos and adj in GENERAL_POS:
            return None
        return item + [("are" if pl else "is"), "never", adj], int(not pos)
    tail = r.random()
    if pos and adj not in EXTREME and tail < 0.25:
        return item + [be, "not", "very", adj], 0
    return item + [be, "not", adj] + (["at", "all"] if tail > 0.75 else []), int(not pos)


def s_verb(r):
    """i loved the book 1 / i did not enjoy the trip 0 / i did not hate the food 1 / nobody liked the show 0"""
    item, domain, _ = sent_item(r)
    if item[1] in ("battery", "bed"):
        return None
    subj = r.choice(["i", "i", "we", "my wife", "my friends", "everyone", "nobody"])
    if subj == "nobody":
        return [subj, r.choice(["liked", "enjoyed"])] + item, 0
    if r.random() < 0.55:
        verb = r.choice(["loved", "liked", "enjoyed", "hated", "disliked"])
        really = ["really"] if r.random() < 0.25 else []
        return subj.split() + really + [verb] + item, int(verb not in ("hated", "disliked"))
    if subj == "everyone":
        return None
    verb = r.choice(["love", "like", "enjoy", "hate"])
    neg = r.choice(["did not", "did not", "does not" if subj == "my wife" else "do not", "never"])
    if neg == "never":
        verb = {"love": "loved", "like": "liked", "enjoy": "enjoyed", "hate": "hated"}[verb]
    return subj.split() + neg.split() + [verb] + item, int(verb.startswith("hate"))


def s_recommend(r):
    """i would recommend this hotel 1 / we would never recommend the tour 0"""
    item, domain, _ = sent_item(r, poss=False)
    if item[1] in ("actors", "ending", "battery", "service", "staff", "waiter", "driver"):
        return None
    mode = r.choice(["", "not", "never", "really"])
    words = [r.choice(["i", "we"]), "would"] + ([mode] if mode else []) + ["recommend"] + item
    return words, int(mode in ("", "really"))


def s_feeling(r):
    """i was happy with the service 1 / i was not impressed by the food 0 / we were not disappointed by the hotel 1"""
    item, _, _ = sent_item(r)
    subj, be = r.choice([("i", "was"), ("we", "were")])
    word, pos = r.choice([("happy", True), ("pleased", True), ("impressed", True), ("satisfied", True),
                          ("disappointed", False), ("unhappy", False)])
    neg = r.random() < 0.45
    if neg and word == "unhappy":
        return None
    prep = "by" if word in ("impressed", "disappointed") else "with"
    return [subj, be] + (["not"] if neg else []) + [word, prep] + item, int(pos != neg)


def s_worth(r):
    """the trip was worth it 1 / the camera was not worth the money 0 / the movie was a waste of time 0"""
    item, domain, pl = sent_item(r)
    if domain == "service" or pl:
        return None
    if r.random() < 0.6:
        neg = r.random() < 0.5
        tail = ["it"] if r.random() < 0.6 else ["the", "money"]
        return item + ["was"] + (["not"] if neg else []) + ["worth"] + tail, int(not neg)
    neg = r.random() < 0.3
    return item + ["was"] + (["not"] if neg else []) + ["a", "waste", "of", r.choice(["time", "money"])], int(neg)


def s_what(r):
    """what a great hotel 1 / what a boring film 0"""
    noun, domain, pl, _ = r.choice(SENT_ITEMS)
    if pl:
        return None
    adj, pos = sent_adj(r, domain)
    return ["what", "an" if adj[0] in "aeiou" else "a", adj, noun], int(pos)


def s_short(r):
    """really good 1 / not good at all 0 / not bad at all 1 / so boring 0"""
    domain = r.choice(sorted(DOMAIN_POS))
    adj, pos = sent_adj(r, domain)
    if r.random() < 0.5:
        return [intensifier(r, adj), adj], int(pos)
    if not pos and adj not in NEGATABLE_NEG:
        return None
    return ["not", adj] + (["at", "all"] if r.random() < 0.5 else []), int(not pos)


def s_could(r):
    """the service could not have been better 1 / the food could not have been worse 0"""
    item, _, _ = sent_item(r)
    better = r.random() < 0.5
    return item + ["could", "not", "have", "been", "better" if better else "worse"], int(better)


SENT_TEMPLATES = [(s_be, 0.42), (s_verb, 0.2), (s_recommend, 0.07), (s_feeling, 0.1), (s_worth, 0.06),
                  (s_what, 0.06), (s_short, 0.05), (s_could, 0.04)]


def sent_draw(r):
    x = r.random()
    for fn, w in SENT_TEMPLATES:
        if x < w:
            return fn(r)
        x -= w
    return SENT_TEMPLATES[0][0](r)


NEGATIONS = {"not", "never", "nobody"}


def sent_kind(words):
    """plain, negation, far or contrast: lesson 12 applies the same rule."""
    if "but" in words:
        return "contrast"
    if "that" in words:
        return "far"
    if any(w in NEGATIONS for w in words):
        return "negation"
    return "plain"


# nouns that one review can set against each other with "but"
CONTRASTS = {"film": {"film"}, "food": {"food", "service", "place"}, "place": {"place", "service", "food"},
             "service": {"service", "food", "place"}, "product": {"product"}, "trip": {"trip", "place", "service"}}


def sent_clause(r, item, domain, pl, past, want):
    """One clause of sentiment `want` about item: the room was clean / the room was not clean /
    the staff is never rude; None if the draw does not give that sentiment."""
    adj, pos = sent_adj(r, domain)
    be = ("were" if past else "are") if pl else ("was" if past else "is")
    if r.random() < 0.6:
        words = item + [be] + ([intensifier(r, adj)] if r.random() < 0.3 else []) + [adj]
        label = int(pos)
    elif not pos and adj not in NEGATABLE_NEG:
        return None
    elif pos and adj not in EXTREME and r.random() < 0.25:
        words, label = item + [be, "not", "very", adj], 0
    else:
        words, label = item + [be, "not", adj], int(not pos)
    return words if label == want else None


def s_contrast(r):
    """the food was good but the service was slow 0 / the room was not clean but the staff was friendly 1"""
    first, domain, pl = sent_item(r)
    second, domain2, pl2 = sent_item(r)
    if domain2 not in CONTRASTS[domain] or second[1] == first[1]:
        return None
    label = int(r.random() < 0.5)
    past = r.random() < 0.6
    a = sent_clause(r, first, domain, pl, past, 1 - label)
    b = sent_clause(r, second, domain2, pl2, past, label)
    if a is None or b is None:
        return None
    return a + ["but"] + b, label


FAR_FRAMES = [["i", "do", "not", "think"], ["i", "did", "not", "think"], ["we", "did", "not", "think"],
              ["i", "would", "not", "say"], ["it", "is", "not", "true"], ["nobody", "would", "say"],
              ["nobody", "thought"]]


def s_far(r):
    """i do not think that the food was good 0 / it is not true that the room was dirty 1"""
    item, domain, pl = sent_item(r)
    adj, pos = sent_adj(r, domain)
    be = ("were" if pl else "was")
    really = [intensifier(r, adj)] if r.random() < 0.2 else []
    return r.choice(FAR_FRAMES) + ["that"] + item + [be] + really + [adj], int(not pos)


def sent_of_kind(r, kind):
    fn = {"contrast": s_contrast, "far": s_far}.get(kind, sent_draw)
    for _ in range(10000):
        got = fn(r)
        if got is not None and sent_kind(got[0]) == kind:
            return got
    raise RuntimeError(f"sentiment: no sentence of kind {kind}")


def make_sentiment(r, train_quota, test_quota):
    """The training and held-out sentences, `quota` of each kind (half of them positive), shuffled.
    A held-out sentence is new, and each of its words occurs at least twice in training."""
    seen, counts, out = set(), None, []
    for quota in (train_quota, test_quota):
        lines = []
        for kind, n in quota:
            got = {0: [], 1: []}
            for _ in range(500000):
                if min(len(v) for v in got.values()) == n // 2:
                    break
                words, label = sent_of_kind(r, kind)
                s = " ".join(words)
                if s in seen or len(got[label]) == n // 2 or (counts and any(counts[w] < 2 for w in words)):
                    continue
                seen.add(s)
                got[label].append(s)
            assert all(len(v) == n // 2 for v in got.values()), f"sentiment: not enough {kind} sentences"
            lines += [(label, s) for label in (0, 1) for s in got[label]]
        r.shuffle(lines)
        out.append(lines)
        counts = Counter(w for _, s in lines for w in s.split())
    return out


# The held-out set leans to the hard kinds; training has every kind.
SENT_TRAIN = [("plain", 360), ("negation", 360), ("far", 180), ("contrast", 300)]
SENT_TEST = [("plain", 30), ("negation", 50), ("far", 50), ("contrast", 70)]


# ============================================================================

def write(path, lines):
    full = os.path.join(ROOT, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))
    print(f"wrote {path}: {len(lines)} lines")


def main():
    r = random.Random(SEED)
    train, test = make_eng_fra(r)
    write("data/eng-fra/train.txt", [f"{en}\t{fr}" for en, fr in train])
    write("data/eng-fra/test.txt", [f"{en}\t{fr}" for en, fr in test])
    s_train, s_test = make_sentiment(random.Random(SEED + 1), SENT_TRAIN, SENT_TEST)
    write("data/sentiment/train.txt", [f"{label}\t{s}" for label, s in s_train])
    write("data/sentiment/test.txt", [f"{label}\t{s}" for label, s in s_test])


if __name__ == "__main__":
    main()
