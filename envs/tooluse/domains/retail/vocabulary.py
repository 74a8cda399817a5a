"""Fixed vocabularies the retail database is drawn from: names, places and the product catalogue.

Everything here is plain data; ``data_model.build_db`` samples from it with a seeded Generator,
so the lists' order is part of the database's identity: append, never reorder.
"""

from __future__ import annotations

__all__ = ["FIRST_NAMES", "LAST_NAMES", "STREETS", "CITIES", "CARD_BRANDS", "PRODUCTS"]

FIRST_NAMES = (
    "Sara", "Liam", "Noah", "Emma", "Olivia", "Ava", "Mason", "Lucas", "Mia", "Ethan",
    "Amelia", "Harper", "Yusuf", "Aarav", "Fatima", "Mei", "Chen", "Sofia", "Mateo", "Isabella",
    "Omar", "Lena", "Ivan", "Anya", "Daiki", "Yuki", "Kwame", "Amara", "Raj", "Priya",
    "Jonas", "Elif", "Diego", "Lucia", "Hugo", "Chloe", "Arjun", "Nia", "Tariq", "Ingrid",
)

LAST_NAMES = (
    "Doe", "Smith", "Garcia", "Kim", "Nguyen", "Patel", "Johnson", "Brown", "Silva", "Rossi",
    "Muller", "Khan", "Lopez", "Ito", "Novak", "Okafor", "Hansen", "Moreau", "Cohen", "Ahmed",
    "Wilson", "Lee", "Santos", "Kowalski", "Yilmaz", "Ivanova", "Tanaka", "Mensah", "Gupta", "Berg",
)

STREETS = (
    "Maple Street", "Oak Avenue", "Cedar Lane", "Pine Road", "Elm Drive", "Willow Way",
    "Lakeview Court", "Hillcrest Boulevard", "River Road", "Sunset Avenue", "Park Place",
    "Chestnut Street", "Highland Avenue", "Meadow Lane", "Spring Street", "Harbor Drive",
)

# (city, state, first three zip digits): zips are drawn inside the city's prefix.
CITIES = (
    ("Austin", "TX", "787"), ("Denver", "CO", "802"), ("Seattle", "WA", "981"),
    ("Portland", "OR", "972"), ("Chicago", "IL", "606"), ("Boston", "MA", "021"),
    ("Phoenix", "AZ", "850"), ("Atlanta", "GA", "303"), ("Columbus", "OH", "432"),
    ("Charlotte", "NC", "282"), ("San Diego", "CA", "921"), ("Philadelphia", "PA", "191"),
    ("Nashville", "TN", "372"), ("Minneapolis", "MN", "554"), ("Houston", "TX", "770"),
    ("Raleigh", "NC", "276"), ("Fort Worth", "TX", "761"), ("San Jose", "CA", "951"),
)

CARD_BRANDS = ("visa", "mastercard", "amex", "discover")

_COLORS = ("black", "white", "red", "blue", "green", "grey")
_SIZES = ("XS", "S", "M", "L", "XL")
_MATERIALS = ("cotton", "polyester", "leather", "wool")
_CAPACITIES = ("500ml", "750ml", "1000ml")

# (product name, base price in dollars, {option name: values}); every product gets several
# variants drawn from the product of its option values.
PRODUCTS: tuple[tuple[str, float, dict[str, tuple[str, ...]]], ...] = (
    ("T-Shirt", 24.0, {"color": _COLORS, "size": _SIZES, "material": ("cotton", "polyester")}),
    ("Hoodie", 58.0, {"color": _COLORS, "size": _SIZES}),
    ("Running Shoes", 119.0, {"color": _COLORS, "size": ("7", "8", "9", "10", "11", "12")}),
    ("Hiking Boots", 165.0, {"color": ("brown", "black", "grey"), "size": ("7", "8", "9", "10", "11"),
                             "waterproof": ("yes", "no")}),
    ("Jacket", 139.0, {"color": _COLORS, "size": _SIZES, "material": _MATERIALS}),
    ("Jeans", 69.0, {"fit": ("slim", "regular", "relaxed"), "size": ("30", "32", "34", "36")}),
    ("Backpack", 89.0, {"color": _COLORS, "capacity": ("20L", "30L", "40L")}),
    ("Water Bottle", 19.0, {"color": _COLORS, "capacity": _CAPACITIES}),
    ("Coffee Maker", 129.0, {"capacity": ("4 cups", "8 cups", "12 cups"), "color": ("black", "silver")}),
    ("Electric Kettle", 49.0, {"capacity": ("1L", "1.5L", "1.7L"), "material": ("steel", "glass", "plastic")}),
    ("Blender", 99.0, {"power": ("600W", "900W", "1200W"), "color": ("black", "white", "red")}),
    ("Desk Lamp", 39.0, {"color": ("black", "white", "brass"), "bulb": ("LED", "halogen")}),
    ("Office Chair", 249.0, {"color": ("black", "grey", "blue"), "armrest": ("fixed", "adjustable"),
                             "material": ("mesh", "leather", "fabric")}),
    ("Standing Desk", 449.0, {"width": ("120cm", "140cm", "160cm"), "color": ("oak", "white", "black")}),
    ("Bookshelf", 159.0, {"shelves": ("3", "4", "5"), "color": ("oak", "white", "walnut")}),
    ("Mechanical Keyboard", 109.0, {"switch": ("linear", "tactile", "clicky"), "layout": ("full", "tenkeyless"),
                                    "backlight": ("none", "white", "RGB")}),
    ("Wireless Mouse", 45.0, {"color": ("black", "white", "grey"), "connection": ("bluetooth", "USB receiver")}),
    ("Headphones", 179.0, {"color": ("black", "white", "blue"), "type": ("over-ear", "on-ear"),
                           "noise cancelling": ("yes", "no")}),
    ("Earbuds", 89.0, {"color": ("black", "white"), "battery": ("6h", "8h", "10h")}),
    ("Bluetooth Speaker", 79.0, {"color": _COLORS, "waterproof": ("yes", "no")}),
    ("Smart Watch", 229.0, {"color": ("black", "silver", "gold"), "band": ("silicone", "leather", "metal"),
                            "size": ("40mm", "44mm")}),
    ("Fitness Tracker", 99.0, {"color": ("black", "pink", "blue"), "display": ("mono", "color")}),
    ("Tablet", 329.0, {"storage": ("64GB", "128GB", "256GB"), "color": ("silver", "grey")}),
    ("E-Reader", 139.0, {"storage": ("8GB", "16GB", "32GB"), "lighting": ("standard", "warm")}),
    ("Digital Camera", 489.0, {"resolution": ("20MP", "24MP", "30MP"), "zoom": ("3x", "5x", "10x")}),
    ("Action Camera", 259.0, {"resolution": ("4K", "5K"), "color": ("black", "silver")}),
    ("Laptop Sleeve", 29.0, {"size": ("13 inch", "14 inch", "15 inch", "16 inch"), "color": _COLORS}),
    ("Phone Case", 22.0, {"model": ("A12", "A13", "A14", "B5"), "color": _COLORS}),
    ("Portable Charger", 39.0, {"capacity": ("5000mAh", "10000mAh", "20000mAh"), "color": ("black", "white")}),
    ("USB Hub", 34.0, {"ports": ("4", "7", "10"), "color": ("black", "silver")}),
    ("Monitor", 279.0, {"size": ("24 inch", "27 inch", "32 inch"), "resolution": ("1080p", "1440p", "4K")}),
    ("Webcam", 69.0, {"resolution": ("720p", "1080p", "4K"), "microphone": ("yes", "no")}),
    ("Yoga Mat", 35.0, {"thickness": ("4mm", "6mm", "8mm"), "color": ("purple", "blue", "green", "black")}),
    ("Dumbbell Set", 119.0, {"weight": ("10kg", "20kg", "30kg"), "material": ("iron", "rubber")}),
    ("Tent", 219.0, {"capacity": ("2-person", "4-person", "6-person"), "color": ("green", "orange", "blue")}),
    ("Sleeping Bag", 89.0, {"temperature": ("0C", "-5C", "-10C"), "size": ("regular", "long")}),
    ("Camping Stove", 59.0, {"fuel": ("gas", "multi-fuel"), "burners": ("1", "2")}),
    ("Bicycle Helmet", 65.0, {"size": ("S", "M", "L"), "color": ("black", "white", "red", "blue")}),
    ("Skateboard", 95.0, {"deck": ("plain", "graphic"), "length": ("28 inch", "31 inch", "34 inch")}),
    ("Sunglasses", 79.0, {"frame": ("black", "tortoise", "gold"), "lens": ("grey", "green", "mirrored"),
                          "polarized": ("yes", "no")}),
    ("Wall Clock", 32.0, {"diameter": ("25cm", "30cm", "40cm"), "style": ("modern", "classic")}),
    ("Throw Pillow", 26.0, {"color": ("beige", "navy", "mustard", "grey"), "size": ("40cm", "50cm")}),
    ("Bed Sheets", 75.0, {"size": ("twin", "full", "queen", "king"), "color": ("white", "grey", "sage"),
                          "material": ("cotton", "linen")}),
    ("Towel Set", 42.0, {"color": ("white", "grey", "blue", "sand"), "pieces": ("3", "6")}),
    ("Cookware Set", 189.0, {"pieces": ("5", "8", "12"), "material": ("stainless steel", "nonstick", "cast iron")}),
    ("Knife Block", 119.0, {"pieces": ("6", "10"), "handle": ("wood", "steel", "black")}),
    ("Air Purifier", 199.0, {"room size": ("small", "medium", "large"), "filter": ("HEPA", "HEPA+carbon")}),
    ("Vacuum Cleaner", 289.0, {"type": ("upright", "stick", "robot"), "bagged": ("yes", "no")}),
    ("Garden Hose", 39.0, {"length": ("15m", "25m", "50m"), "material": ("rubber", "vinyl")}),
    ("Board Game", 44.0, {"edition": ("standard", "deluxe"), "language": ("English", "Spanish", "French")}),
    ("Jigsaw Puzzle", 21.0, {"pieces": ("500", "1000", "2000"), "theme": ("landscape", "animals", "art")}),
    ("Notebook", 12.0, {"size": ("A5", "A4"), "paper": ("lined", "dotted", "blank"),
                        "cover": ("hard", "soft")}),
    ("Fountain Pen", 58.0, {"nib": ("fine", "medium", "broad"), "color": ("black", "blue", "burgundy")}),
    ("Perfume", 95.0, {"size": ("30ml", "50ml", "100ml"), "scent": ("citrus", "woody", "floral")}),
)
