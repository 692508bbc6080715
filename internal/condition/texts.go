package condition

import "sort"

// publicDomain holds the passages the noise beds' talkers read: texts in the public domain
// (published before 1900, or works of the US government), so beds can be made and shared freely.
// They are background speech, never graded or transcribed.
var publicDomain = map[string]string{
	"gettysburg-1863": `Four score and seven years ago our fathers brought forth on this continent a new nation,
conceived in liberty, and dedicated to the proposition that all men are created equal. Now we are engaged in a
great civil war, testing whether that nation, or any nation so conceived and so dedicated, can long endure. We
are met on a great battlefield of that war. We have come to dedicate a portion of that field, as a final resting
place for those who here gave their lives that that nation might live. It is altogether fitting and proper that
we should do this. But, in a larger sense, we can not dedicate, we can not consecrate, we can not hallow this
ground. The brave men, living and dead, who struggled here, have consecrated it, far above our poor power to add
or detract. The world will little note, nor long remember what we say here, but it can never forget what they
did here.`,
	"constitution-preamble-1787": `We the People of the United States, in Order to form a more perfect Union,
establish Justice, insure domestic Tranquility, provide for the common defence, promote the general Welfare, and
secure the Blessings of Liberty to ourselves and our Posterity, do ordain and establish this Constitution for the
United States of America.`,
	"two-cities-1859": `It was the best of times, it was the worst of times, it was the age of wisdom, it was the
age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it
was the season of Darkness, it was the spring of hope, it was the winter of despair. We had everything before us,
we had nothing before us. We were all going direct to Heaven, we were all going direct the other way. In short,
the period was so far like the present period, that some of its noisiest authorities insisted on its being
received, for good or for evil, in the superlative degree of comparison only.`,
	"pride-prejudice-1813": `It is a truth universally acknowledged, that a single man in possession of a good
fortune, must be in want of a wife. However little known the feelings or views of such a man may be on his first
entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is
considered the rightful property of some one or other of their daughters. My dear Mr. Bennet, said his lady to
him one day, have you heard that Netherfield Park is let at last? Mr. Bennet replied that he had not. But it is,
returned she; for Mrs. Long has just been here, and she told me all about it.`,
	"moby-dick-1851": `Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in
my purse, and nothing particular to interest me on shore, I thought I would sail about a little and see the
watery part of the world. It is a way I have of driving off the spleen, and regulating the circulation. Whenever
I find myself growing grim about the mouth; whenever it is a damp, drizzly November in my soul; whenever I find
myself involuntarily pausing before coffin warehouses, and bringing up the rear of every funeral I meet; then, I
account it high time to get to sea as soon as I can.`,
	"aesop-fox-grapes": `A hungry fox saw some fine bunches of grapes hanging from a vine that was trained along a
high trellis, and did his best to reach them by jumping as high as he could into the air. But it was all in
vain, for they were just out of reach. So he gave up trying, and walked away with an air of dignity and
unconcern, remarking, I thought those grapes were ripe, but I see now they are quite sour.`,
	"aesop-hare-tortoise": `A hare was one day making fun of a tortoise for being so slow upon his feet. Wait a
bit, said the tortoise; I will run a race with you, and I wager that I win. Oh, well, replied the hare, who was
much amused at the idea, let us try and see. It was soon agreed that the fox should set a course for them, and be
the judge. When the time came both started off together, but the hare was soon so far ahead that he thought he
might as well have a rest. So down he lay and fell fast asleep. Meanwhile the tortoise kept plodding on, and in
time reached the goal. Slow and steady wins the race.`,
	"bohemia-1891": `To Sherlock Holmes she is always the woman. I have seldom heard him mention her under any other
name. In his eyes she eclipses and predominates the whole of her sex. It was not that he felt any emotion akin to
love for Irene Adler. All emotions, and that one particularly, were abhorrent to his cold, precise but admirably
balanced mind. He was, I take it, the most perfect reasoning and observing machine that the world has seen.`,
}

// textIDs lists the passages in a fixed order.
func textIDs() []string {
	ids := make([]string, 0, len(publicDomain))
	for id := range publicDomain {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
