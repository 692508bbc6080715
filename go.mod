module github.com/voicebench/humanaudit

go 1.26
