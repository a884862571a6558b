// The most common (and most breached) passwords, lower case: the top of the public leak and
// "worst passwords" lists (RockYou, SplashData/NordPass yearly lists, default credentials). Used by
// the policy's passwordBreachedCheck together with the pattern rules in password.ts; a password is
// also refused when it is one of these with digits or symbols around it or in leetspeak.
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set(`
123456 password 12345678 qwerty 123456789 12345 1234 111111 1234567 dragon 123123 baseball abc123
football monkey letmein 696969 shadow master 666666 qwertyuiop 123321 mustang 1234567890 michael
654321 superman 1qaz2wsx 7777777 121212 000000 qazwsx 123qwe killer trustno1 jordan jennifer zxcvbnm
asdfgh hunter buster soccer harley batman andrew tigger sunshine iloveyou charlie robert thomas
hockey ranger daniel starwars klaster 112233 george computer michelle jessica pepper 1111 zxcvbn
555555 11111111 131313 freedom 777777 pass maggie 159753 aaaaaa ginger princess joshua cheese amanda
summer love ashley nicole chelsea biteme matthew access yankees 987654321 dallas austin thunder
taylor matrix minecraft william corvette hello martin heather secret merlin diamond 1234qwer hammer
silver 222222 88888888 anthony justin test bailey q1w2e3r4t5 patrick internet scooter orange 11111
golfer cookie richard samantha bigdog guitar jackson whatever mickey chicken sparky snoopy maverick
phoenix camaro peanut morgan welcome falcon cowboy ferrari samsung andrea smokey steelers joseph
mercedes dakota arsenal eagles melissa boomer booboo spider nascar monster tigers yellow xxxxxx
123123123 gateway marina diablo bulldog qwer1234 compaq purple hardcore banana junior hannah 123654
porsche lakers iceman money cowboys 987654 london tennis 999999 ncc1701 coffee scooby 0000 miller
boston q1w2e3r4 brandon yamaha chester mother forever johnny edward 333333 oliver redsox player
nikita knight fender barney midnight please brandy chicago badboy slayer rangers charles angel
flower bigdaddy rabbit wizard jasper enter rachel chris steven winner adidas victoria natasha
1q2w3e4r jasmine winter prince marine fishing cocacola casper james 232323 raiders 888888 marlboro
gandalf asdfasdf crystal 87654321 12344321 golden 8675309 panther lauren angela spanky thx1138
angels madison winston shannon mike toyota jordan23 canada sophie apples tiger dexter qweqwe dolphin
password1 password12 password123 passw0rd p@ssw0rd p@ssword admin admin123 administrator root toor
changeme changeit default guest login welcome1 letmein1 qwerty123 qwerty1 qwerty12 1q2w3e 1qazxsw2
zaq12wsx zaq1zaq1 qazwsx123 abcdef abcd1234 aa123456 a123456 123abc iloveu lovely babygirl football1
monkey1 shadow1 sunshine1 superman1 princess1 azerty solo starwars1 trustme secret1 hello123
welcome123 test123 test1234 testtest user demo sample master1 hunter2 letmein123 google facebook
linkedin twitter instagram youtube apple microsoft windows linux ubuntu oracle mysql postgres server
database backup company business office spring autumn holiday christmas birthday family friends
flowers beautiful happy happiness smile sweet cute baby babe honey sugar darling sweetheart lovers
loveme iloveyou1 myspace blink182 pokemon naruto liverpool manchester barcelona realmadrid juventus
basketball volleyball jesus christ heaven blessed faith church qwertyui asdfghjk zxcvbnm1 qwerasdf
asdf1234 1234abcd 147258369 741852963 159357 147258 789456123 456789 123456a a1b2c3 a1b2c3d4
abc12345 pass123 pass1234 passpass qwerty12345 zxcvbnm123 11223344 102030 100200 1111111111
0987654321 5201314 1314520 woaini anything nothing something unknown secure security private
mypassword yourpassword thepassword newpassword oldpassword nopassword passwort motdepasse
contrasena senha wachtwoord salasana haslo parola lozinka superstar superuser supervisor sysadmin
webmaster support service production studio welcome2024 summer2024 winter2024 spring2024 autumn2024
qwerty2024 password2024 password2025 letmeinnow iloveyou123 princess123 monkey123 dragon123
shadow123 sunshine123 football123 baseball123 master123 michael1 jessica1 jennifer1 charlie1 ashley1
daniel1 thomas1 robert1 jordan1 hunter1 buster1 soccer1 harley1 batman1 andrew1 tigger1 pepper1
maggie1 ginger1 joshua1 cheese1 amanda1 summer1 nicole1 chelsea1 matthew1 access1 computer1
internet1 freedom1 welcome12 trustno1! zxcv1234 1qaz!qaz !qaz2wsx qwe123 qwe123qwe asd123 zxc123
123asd 123zxc 1234asdf 5555555 55555 00000000 12341234 43214321 1212 6969 696969696969 yankees1
lakers1 dallas1
`.split(/\s+/).filter(Boolean));
