"""Small talk for generated conversations: varied everyday exchanges that carry no fact a question asks about.

Built from parts (an opener, a detail, an aside) so that no two exchanges of a conversation read alike, and worded
with the everyday words that questions also use ("live", "work", "name", "car", "trip", "drink"), as real chats
are: a words channel that matches a common word finds small talk too.
"""

from __future__ import annotations

import random

OPENERS = [
    "Morning! The weather is doing that thing again where it can't decide between rain and sun.",
    "I watched a documentary about octopuses last night and now I can't stop thinking about them.",
    "Do you have any tips for keeping basil alive on a windowsill? Mine keeps drooping.",
    "Traffic on the way to work was unreal today, I sat still for twenty minutes.",
    "I tried a new recipe yesterday, a lentil soup with smoked paprika, and it actually worked.",
    "My neighbour's kid has started learning the trumpet. Every evening. At seven sharp.",
    "Can you recommend a podcast for a long drive? I'm bored of everything I listen to.",
    "I finally cleaned out the drawer where cables go to die.",
    "There's a live concert in the park this weekend, thinking about going if it stays dry.",
    "I keep forgetting the name of that actor from the heist movie, it's driving me mad.",
    "What's a good way to stop procrastinating on small chores?",
    "I spilled my drink all over the kitchen table this morning, great start to the day.",
    "Someone parked their car across two spaces again in our street. Some people!",
    "I've been reading a mystery novel and I'm sure the gardener did it.",
    "Is it normal that my laptop fan sounds like a jet engine when I open a browser?",
    "I saw a fox in the garden at dawn, it just sat there looking at me.",
    "We played a board game last night and it ended in a very heated argument about rules.",
    "I need a gift idea for a colleague who has everything.",
    "The bakery on the corner started making cinnamon buns and I have no self-control.",
    "How long should I boil an egg for a runny yolk? I always get it wrong.",
    "Why does every app want me to make an account these days?",
    "I'm trying to drink more water but I keep forgetting by noon.",
    "I found an old photo album at my parents' place, the haircuts were something else.",
    "My phone battery dies by lunchtime lately, is that the cold?",
    "I started a jigsaw puzzle of a lighthouse, a thousand pieces, what was I thinking.",
    "Any idea why my bread never rises properly? I follow the recipe exactly.",
    "Honestly I just want to talk about something silly today. Tell me a fun fact.",
    "The live stream of the rocket launch got delayed three times, I gave up.",
    "I walked past a street where they film a TV series, lots of trucks and cables everywhere.",
    "I think I need a new pair of running shoes, these ones squeak.",
    "The printer at the office jammed three times before ten o'clock.",
    "I burnt the toast again. The smoke alarm and I are on first-name terms.",
    "A pigeon has decided our balcony railing is its home now.",
    "Our building's lift has been out of order all week, my legs hate me.",
    "I tried meditating for five minutes and thought about lunch the whole time.",
    "There was a double rainbow over the motorway this evening.",
    "I lost an hour scrolling through photos of tiny houses.",
    "My playlist shuffled to a song I haven't heard since school.",
    "The supermarket moved every aisle around and I walked in circles.",
    "I've been trying to learn a few words of Icelandic just for fun.",
    "Someone in the flat upstairs is clearly learning to tap dance.",
    "My houseplant finally grew a new leaf and I'm unreasonably proud.",
    "The Wi-Fi dropped in the middle of a video call, classic.",
    "I found a tenner in an old coat pocket, best day of the month.",
    "Is it weird to eat cereal for dinner? Asking for myself.",
    "We had a power cut last night and played cards by candlelight.",
    "I started knitting a scarf and it already looks like a fishing net.",
    "The cinema near us shows old films on Tuesdays, I saw a Hitchcock.",
    "I can never remember whether it's 'affect' or 'effect'.",
    "My neighbour gave us a bag of courgettes the size of baseball bats.",
    "I signed a petition to save the old oak tree in the square.",
    "Why do socks always disappear in the wash?",
    "I tried a crossword in ink today, very bold of me.",
    "A street musician played the accordion outside the station all afternoon.",
    "I watched the sunrise by accident because the cat woke me at five.",
]
PREFIXES = ["", "", "", "So, ", "Random thought: ", "Hey! ", "Okay, ", "Ugh, ", "Fun one: ", "Hi again. "]
DETAILS = [
    "Anyway, nothing important, just sharing.",
    "It's been that kind of week.",
    "Not a big deal, it just made me laugh.",
    "I'm curious what you think.",
    "Tell me I'm not the only one.",
    "I should probably write that down somewhere.",
    "Maybe I'm overthinking it.",
    "",
    "",
]
REPLIES = [
    "Ha, that sounds like a very ordinary and very relatable day.",
    "Good question. Small, regular habits usually beat big plans, so start with something tiny.",
    "That made me smile. Little things like that make a day memorable.",
    "You're definitely not the only one, that happens to a lot of people.",
    "Here's a fun fact to go with it: octopuses have three hearts and blue blood.",
    "If it helps, try setting a reminder at the same time each day; it builds the habit quickly.",
    "That sounds frustrating. A short walk or a cup of something warm might reset the mood.",
    "I'd keep it simple: pick one thing, do it for ten minutes, and see how it feels.",
    "Funny how those things stick with us. Thanks for telling me about it.",
    "Honestly, that's the kind of story that's better told over dinner.",
    "Sounds lovely. Enjoy it while it lasts!",
    "I'm happy to chat about anything, silly or serious.",
    "Well, the internet is full of opinions on that one, but patience usually wins.",
    "A classic! Let me know how it turns out.",
]
ASIDES = [
    "Oh, and the forecast says the weekend will be sunny.",
    "Also, I might take a nap later.",
    "By the way, I still haven't finished that series everyone talks about.",
    "",
    "",
    "",
]


def small_talk(rng: random.Random) -> tuple[str, str]:
    """One everyday exchange: (what the user says, what the assistant answers)."""
    opener = rng.choice(PREFIXES) + rng.choice(OPENERS)
    user = " ".join(part for part in (opener, rng.choice(DETAILS), rng.choice(ASIDES)) if part)
    return user, rng.choice(REPLIES)
