module github.com/tqscavenger/tqscavenger/deploy/image

go 1.26.8
