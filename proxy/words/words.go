// Package words holds bankdoor's built-in payment and write words and the
// tokenizer that finds them in tool names. (Skeleton: see the gate helper.)
package words
