"""Common given names (United States usage, women's and men's, with frequent short forms):
a signature line that starts with one ("Jane Church", "Anne Powers") is a person's name even
when its surname is also a word organisations are named with. Not every name is here, nor
needs to be: a line with a word only bodies are named with ("Association", "Inc.") is an
organisation whatever it starts with, and a line with no such word is none anyway; the list
decides only the lines whose one cue is a word that is also a surname (Church, Bank, Powers)."""

from __future__ import annotations

GIVEN_NAMES = frozenset("""
aaron abby ada abigail adam adrian aisha al alan albert alex alexander alexandra alexis alfred alice alicia
alison allen allison alma amanda amber amelia amy ana andrea andrew andy angel angela angelica angie anita
ann anna anne annette annie anthony antonio april arlene arnold arthur ashley audrey austin barbara barry
beatrice becky ben benjamin bernard bernice bert beth bethany betsy betty beverly bill billy blake bob bobby
bonnie brad bradley brandon brenda brent brett brian bridget brittany brooke bruce bryan byron caleb calvin
cameron camille carl carla carlos carmen carol caroline carolyn carrie casey cassandra catherine cathy cecilia
chad charlene charles charlie charlotte chelsea cheryl chris christian christina christine christopher
christy chuck cindy claire clara clarence claude claudia clay clayton clifford clint clyde cody colin colleen
connie constance corey cory courtney craig cristina crystal curtis cynthia daisy dale dan dana daniel danielle
danny darlene darrell darren darryl dave david dawn dean deanna debbie deborah debra denise dennis derek
derrick diana diane dianne dolores don donald donna doris dorothy doug douglas duane dustin dwight earl ed
eddie edgar edith edna eduardo edward edwin eileen elaine eleanor elena elizabeth ella ellen elsie emily emma
eric erica erik erin ernest esther ethan ethel eugene eva evan evelyn felicia felix fernando florence floyd
frances francis francisco frank franklin fred freda frederick gabriel gail gary gene geneva george
gerald geraldine gilbert gina glen glenda glenn gloria gordon grace greg gregory gretchen guy gwen hannah
harold harriet harry harvey hazel heather hector heidi helen henry herbert herman hilda holly howard hugh
ian ida irene iris isaac isabel jack jackie jacob jacqueline jaime jake james jamie jan jane janet janice
jared jason javier jay jean jeanette jeanne jeff jeffery jeffrey jenna jennifer jenny jeremy jerome jerry
jesse jessica jessie jill jim jimmy jo joan joann joanne joe joel joey john johnny jon jonathan jordan jorge
jose joseph josephine josh joshua joy joyce juan juanita judith judy julia julie june justin kara karen kari
karl kate katherine kathleen kathryn kathy katie katrina kay kayla keith kelly ken kenneth kent kerry kevin
kim kimberly kirk kristen kristin kristina kurt kyle lana lance larry laura lauren laurie lawrence leah lee
leigh lena leo leon leonard leroy leslie lester lillian linda lindsay lindsey lisa lloyd lois lonnie lori
lorraine louis louise lucille lucy luis luke lydia lynn mabel madeline maggie marc marcia marcus margaret
margie maria marian marie marilyn mario marion marjorie mark marlene marsha martha martin marvin mary
matt matthew maureen max maxine megan melanie melinda melissa melvin meredith mia michael michele michelle
miguel mike mildred milton miriam missy mitchell molly monica morgan nancy naomi natalie nathan nathaniel
neil nellie nicholas nick nicole nina noah norma norman olivia oscar pam pamela pat patricia patrick patsy
patty paul paula pauline pearl peggy penny pete peter phil philip phillip phyllis rachel ralph ramon randall
randy ray raymond rebecca regina renee rex rhonda ricardo richard rick ricky rita rob robert roberta roberto
robin robyn rodney roger roland ron ronald ronnie rosa rose rosemary ross roy ruby russell ruth ryan sally
sam samantha samuel sandra sandy sara sarah scott sean seth shannon sharon shawn sheila shelby shelley
sherri sherry shirley sidney sonia sophia stacey stacy stanley stella stephanie stephen steve steven stuart
sue susan suzanne sylvia tamara tammy tanya tara ted teresa terri terry theodore theresa thomas tim timothy
tina todd tom tommy toni tony tracey traci tracy travis troy tyler valerie vanessa vera vernon veronica
vicki vickie victor victoria vincent viola vivian wade walter wanda warren wayne wendy wesley
willard william willie wilma yolanda yvonne zachary
""".split())
