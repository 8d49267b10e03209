create table hello_greetings (language text primary key, text text not null);
insert into hello_greetings values ('en', 'Hello'), ('fr', 'Bonjour'), ('de', 'Hallo');
