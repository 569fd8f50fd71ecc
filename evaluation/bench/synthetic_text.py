"""Synthetic conversation text for the scale benchmark: turns, segment summaries, facts, profiles and questions.

Every text belongs to a topic, drawn from templates filled with names, places and things, so texts vary like chat
does and share words within a topic (which the benchmark's fake embedder turns into nearby vectors). Deterministic
for a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Topic:
    name: str
    keywords: tuple[str, ...]
    things: tuple[str, ...]
    user: tuple[str, ...]
    assistant: tuple[str, ...]


FRIENDS = ("Maya", "Tom", "Priya", "Lukas", "Chen", "Sofia", "Omar", "Grace", "Diego", "Hana", "Ines", "Kofi")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

TOPICS = (
    Topic(
        "hiking",
        ("hiking", "trail", "summit", "boots", "ridge", "backpack"),
        ("the Eagle Ridge trail", "Mount Tamsin", "the waterfall loop", "the old quarry path"),
        (
            "I hiked {thing} with {friend} on {day}; the last mile to the summit was brutal.",
            "My new hiking boots gave me blisters on {thing}, so I need better socks.",
            "We are planning a {n}-mile hike along {thing} next month. Any tips for the backpack?",
        ),
        (
            "That trail sounds great. Pack extra water and start early so you reach the summit before noon.",
            "Blisters are miserable. Wool socks and breaking the boots in on short walks usually help.",
        ),
    ),
    Topic(
        "cooking",
        ("recipe", "cooking", "oven", "dinner", "sauce", "baking"),
        ("a lemon risotto", "sourdough bread", "a Thai green curry", "my grandmother's lasagna"),
        (
            "I tried cooking {thing} for dinner on {day} and {friend} asked for the recipe.",
            "The sauce for {thing} split again. I think the oven was too hot.",
            "I want to get better at baking; {thing} is my goal for the holidays.",
        ),
        (
            "Nice! For {thing}, adding the butter at the end keeps the sauce glossy.",
            "Baking is chemistry: weigh the flour and give the dough time to rest.",
        ),
    ),
    Topic(
        "work",
        ("project", "deadline", "manager", "meeting", "promotion", "office"),
        ("the billing migration", "the quarterly report", "the new onboarding flow", "the data warehouse project"),
        (
            "My manager moved the deadline for {thing} to {day}, and the team is stressed.",
            "I presented {thing} in the all-hands meeting and it went better than expected.",
            "I'm hoping the work on {thing} counts towards a promotion this year.",
        ),
        (
            "A shifted deadline is hard. Could you agree with your manager on what can wait?",
            "Congratulations on the presentation! Write down what worked for your next review.",
        ),
    ),
    Topic(
        "family",
        ("sister", "parents", "birthday", "family", "nephew", "reunion"),
        ("my sister's wedding", "my dad's 60th birthday", "the family reunion", "my nephew's school play"),
        (
            "We are organising {thing}; {friend} is helping with the decorations.",
            "My parents flew in for {thing} and stayed until {day}.",
            "I bought a small gift for {thing}, a framed photo from {n} years ago.",
        ),
        (
            "That sounds like a lovely family moment. How are your parents doing?",
            "A framed photo is a thoughtful gift; people keep those for years.",
        ),
    ),
    Topic(
        "running",
        ("running", "marathon", "pace", "training", "race", "kilometres"),
        ("the city half marathon", "a 10k charity race", "my interval training", "the Sunday long run"),
        (
            "I finished {thing} on {day} at a pace of {n} seconds faster per kilometre than last year.",
            "My knee hurts after {thing}; should I take a break from training?",
            "{friend} and I signed up for {thing} in the spring.",
        ),
        (
            "Great pace improvement! Keep most runs easy so the fast ones stay fast.",
            "Knee pain is worth a rest week; if it persists, see a physiotherapist.",
        ),
    ),
    Topic(
        "travel",
        ("trip", "flight", "hotel", "travel", "museum", "beach"),
        ("Lisbon", "Kyoto", "the Scottish Highlands", "a road trip through Patagonia"),
        (
            "We just booked flights to {thing} for {n} days in October.",
            "In {thing} we visited a museum every morning and the beach every afternoon.",
            "{friend} recommended a small hotel in {thing}; the reviews look good.",
        ),
        (
            "{thing} is a wonderful choice. Book the popular museums ahead of time.",
            "That itinerary sounds relaxing. Did you try the local food?",
        ),
    ),
    Topic(
        "pets",
        ("dog", "puppy", "vet", "cat", "walks", "adopted"),
        ("our puppy Rex", "the rescue cat Miso", "Biscuit the beagle", "our old dog Pepper"),
        (
            "We adopted {thing} last {day} from the shelter.",
            "{thing} had a vet appointment; nothing serious, just a sore paw.",
            "Long walks with {thing} are the best part of my week.",
        ),
        (
            "Congratulations on adopting! The first weeks are all about routine.",
            "Glad the vet visit went well. Keep an eye on the paw for a few days.",
        ),
    ),
    Topic(
        "music",
        ("guitar", "concert", "violin", "band", "lessons", "practice"),
        ("my violin lessons", "a jazz concert downtown", "our garage band", "learning a Bach partita"),
        (
            "I practised {thing} for {n} minutes every evening this week.",
            "{friend} invited me to {thing} on {day}; the drummer was incredible.",
            "My teacher says {thing} is finally coming together.",
        ),
        (
            "Daily practice adds up. Recording yourself helps you hear the progress.",
            "That concert sounds fun. Live music is the best way to end a week.",
        ),
    ),
    Topic(
        "health",
        ("doctor", "sleep", "diet", "yoga", "stress", "therapy"),
        ("a new sleep routine", "my yoga class", "cutting down on sugar", "my therapy sessions"),
        (
            "I started {thing} and I already feel less stress.",
            "My doctor suggested {thing} after my check-up on {day}.",
            "{thing} has been harder than I thought, but I'm sticking with it.",
        ),
        (
            "Small habits compound; {thing} is a good one to keep.",
            "It is normal for new routines to feel hard at first. Be kind to yourself.",
        ),
    ),
    Topic(
        "home",
        ("apartment", "garden", "renovation", "furniture", "kitchen", "moving"),
        ("the kitchen renovation", "our balcony garden", "moving to a bigger apartment", "a second-hand sofa"),
        (
            "We finally finished {thing}; it took {n} weekends.",
            "{friend} helped me with {thing} on {day}.",
            "I'm worried {thing} will cost more than we planned.",
        ),
        (
            "That is a big project done. Enjoy the new space!",
            "Budgets for renovations often slip; keep a small reserve for surprises.",
        ),
    ),
    Topic(
        "books",
        ("novel", "reading", "author", "library", "chapter", "book"),
        ("a mystery novel by Tana French", "the new library card", "a book club pick", "a biography of Marie Curie"),
        (
            "I'm reading {thing} and can't put it down; I'm on chapter {n}.",
            "{friend} lent me {thing}; we will discuss it on {day}.",
            "I want to read more this year, starting with {thing}.",
        ),
        (
            "Good choice! What do you like most about the author's style?",
            "A reading goal is easier with a fixed time each day, like before bed.",
        ),
    ),
    Topic(
        "learning",
        ("course", "language", "exam", "studying", "spanish", "certificate"),
        ("an online Spanish course", "the cloud certificate exam", "evening pottery classes", "a statistics course"),
        (
            "I signed up for {thing} and the first lesson is on {day}.",
            "Studying for {thing} takes {n} hours a week, which is a lot with work.",
            "I passed {thing}! {friend} took me out to celebrate.",
        ),
        (
            "Well done! Spaced repetition helps a lot when learning a language.",
            "Balancing study and work is hard; short daily sessions beat long weekend ones.",
        ),
    ),
)

_QUESTIONS = (
    "What did I tell you about {thing}?",
    "When did I mention {thing}?",
    "Who helped me with {thing}?",
    "How did {thing} go in the end?",
    "Do you remember what happened with {thing}?",
)


class TextGenerator:
    """Deterministic synthetic chat for one seed."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def topic(self) -> Topic:
        return self.random.choice(TOPICS)

    def _fill(self, template: str, topic: Topic, rng: random.Random | None = None) -> str:
        rng = rng or self.random
        values = {
            "thing": rng.choice(topic.things),
            "friend": rng.choice(FRIENDS),
            "day": rng.choice(DAYS),
            "n": rng.randint(2, 40),
        }
        return template.format(**values)

    def turn(self, topic: Topic) -> tuple[str, str]:
        """One (user message, assistant reply) on `topic`."""
        return self._fill(self.random.choice(topic.user), topic), self._fill(self.random.choice(topic.assistant), topic)

    def long_reply(self, topic: Topic, chars: int, rng: random.Random) -> str:
        """An assistant reply of at least `chars` characters on `topic` (a detailed answer, several paragraphs), drawn
        from `rng` so that the generator's own sequence is the same whether or not long replies are asked for."""
        paragraphs: list[str] = []
        while sum(len(p) + 2 for p in paragraphs) < chars:
            sentences = [self._fill(rng.choice(topic.assistant), topic, rng) for _ in range(rng.randint(3, 6))]
            paragraphs.append(" ".join(sentences))
        return "\n\n".join(paragraphs)

    def summary(self, topic: Topic) -> str:
        return f"The user talked about {topic.name}: {self._fill(self.random.choice(topic.user), topic)}"

    def keywords(self, topic: Topic) -> list[str]:
        return self.random.sample(list(topic.keywords), k=min(5, len(topic.keywords)))

    def fact(self, topic: Topic, at: datetime, who: str) -> str:
        source = topic.user if who == "user" else topic.assistant
        return f'{at:%Y-%m-%d}: The {who} said: "{self._fill(self.random.choice(source), topic)}"'

    def profile(self, topics: list[Topic]) -> str:
        lines = [f"- Often talks about {t.name} ({', '.join(t.keywords[:3])})." for t in topics]
        return "\n".join(["Profile:", *lines])

    def question(self, topic: Topic) -> str:
        return self._fill(self.random.choice(_QUESTIONS), topic)
