"""Stopwords of the languages whose stemmers the analyzer uses, written with their diacritics.

Short lists on purpose: function words only (articles, pronouns, prepositions, conjunctions,
auxiliaries), because a content word wrongly dropped costs more than a function word kept. The
analyzer folds them the way it folds text, and also counts them to guess a text's language.
"""

from __future__ import annotations

ENGLISH = """
a about an and any are as at be been being both but by can could did do does doing during each
for from further had has have having he her here hers herself him himself his how i if in into is
it its itself just me my myself nor of on once or other our ours ourselves own same she should so
some such than that the their theirs them themselves then there these they this those through to
too until very was we were what when where which while who whom why will with would you your yours
yourself yourselves i'm i'd let's please
"""

LITHUANIAN = """
ir ar bet o kad jog nes su be iš į ant apie per po prie nuo iki pas už prieš tarp dėl pagal tai tas
ta tie tos to tą šis ši šie šios šį šią jis ji jie jos jo jų jam jai jiems aš tu mes jūs mano tavo
savo mūsų jūsų man tau mums jums mane tave mus jus kas ko kam kur kada kaip kuris kuri kurie kurios
kurį kurią kurių kuo koks kokia kokie kiek ne taip yra buvo bus būti esu esi esame gali galima
reikia tik dar jau labai visi visa visos viską kiekvieną čia ten dabar vėl pat net kol jei jeigu
tačiau arba nei lyg vis kitas kita kiti kitą prašau
"""

GERMAN = """
der die das des dem den ein eine einer eines einem einen und oder aber in im ins an am auf aus bei
mit nach von vom zu zum zur für über unter vor durch gegen ohne um ich du er sie es wir ihr mich mir
dich dir uns euch ihn ihm ihnen mein meine meinen meinem meiner dein deine sein seine seinen unser
unsere unseren unserem unserer euer ist sind war waren bin bist hat haben hatte wird werden wurde
kann können soll sollen muss will möchte nicht kein keine auch noch schon nur so wie was wer wo wann
warum welche welcher welches dass ob wenn als da dann hier dort bitte alle alles mal doch sich man
ja etwas
"""

SPANISH = """
el la los las un una unos unas lo al del de en y o u e a con sin por para sobre entre hasta desde
que qué como cómo cuando cuándo cuál cuáles donde dónde quien quién es son está están esta este
esto estos estas ese esa eso esos esas ser estar hay ha han he fue mi mis tu tus su sus nuestro
nuestra nuestros nuestras me te se nos le les yo él ella ellos ellas nosotros usted ustedes no sí
ya muy más pero también todo todos toda todas cada otro otra porque si favor
"""

FRENCH = """
le la les l un une des du de d et ou à au aux en dans sur sous par pour avec sans chez entre que qu
qui quoi quel quelle quels quelles dont où ce cet cette ces c ça cela je j tu il elle on nous vous
ils elles me m te t se s moi toi lui leur leurs mon ma mes ton ta tes son sa ses notre nos votre
vos est sont suis es être a ai as avons avez ont avoir été ne pas plus y si mais donc car comme tout
tous toute toutes très aussi déjà encore plaît
"""
