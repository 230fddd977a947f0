from fbbench.entry import main

main()
