module example.com/goclient

go 1.26.0
